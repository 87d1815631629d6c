// Package result is the written record of a load test run: what a run of
// package loadtest measured, step by step and kind by kind, where and from
// what code it ran, its verdict, and its comparison with a committed
// baseline — the JSON files a run writes and the reports, history and A/B
// comparisons read.
//
// A Result is read with ReadResult and rendered with Result.Markdown; the
// figures of one step are a StepResult, of one request kind a KindResult,
// whose latency histogram is kept so that results merge and re-analyse
// exactly (MergeKinds). A Baseline holds the spread of several results and
// compares a new one with it (Baseline.Compare).
//
// Names such as Scenario.Drain, SelfCheck.MaxDrift or User.Ready in the
// fields' comments are those of package loadtest, whose knobs and checks
// made the figures.
package result
