// Package ab compares two builds of a system under test with interleaved
// A/B trials on one machine and says whether B (head) regressed against A
// (base), and what the trials could have missed.
//
// Run runs blocks of one A and one B trial in random order (Order); each
// trial yields a loadtest.Result, from which the figures of figures.go are
// taken: throughput, failures overall and per request kind, p50/p95/p99 of
// every kind (observed kinds such as stream events included), CPU per
// success and memory of every component. Compare judges each figure's two
// samples with a Mann-Whitney U test and the Hodges–Lehmann change with its
// Moses interval: Same, Different or Inconclusive against the band of what
// matters (Rule).
//
// The verdict weighs every figure with enough samples, but the harness's
// cost and memory (or the figures Config.Primary names), and corrects for
// looking at many: a primary figure is different only when its p-value
// survives the Holm–Bonferroni step-down over all of them at FamilyAlpha,
// and a regression asks, further, for the whole interval of the change
// beyond the band. While a primary figure is neither shown the same nor
// different, Run adds blocks up to Config.MaxTrials, and each Report says
// how the trials ended (Report.Stop). An unchanged verdict names the
// largest worsening its intervals leave open (Report.MissedUpTo).
package ab
