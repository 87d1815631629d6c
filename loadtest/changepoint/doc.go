// Package changepoint finds, in a nightly series of one figure (a p95
// latency, a throughput, CPU-seconds or memory per successful request;
// oldest night first), the abrupt steps — change points — and the slow
// drifts — trends — so that a report can say "p95 dashboard stepped ×1.4
// at night 12" or "cpu/ok relay drifts +3.1%/night over nights 3–10".
//
// [Analyze] works on the logarithms of the values: figures are positive
// and their changes multiplicative, so a step is a ratio and a trend a
// relative change per night. A value that is zero, negative, NaN or
// infinite is refused with an error naming its index.
//
// # Change points: E-divisive means
//
// Steps are found with E-divisive means (Matteson and James, "A
// nonparametric approach for multiple change point analysis of
// multivariate data", JASA 109(505), 2014), the method of MongoDB's
// performance CI (Daly et al., "The use of change point detection to
// identify software performance regressions in a continuous integration
// system", ICPE 2020) and of Apache Otava (formerly Hunter).
//
// For a segment of the series, every split τ into X = [start, τ) and
// Y = [τ, end), each side at least MinSize points, is scored with the
// scaled energy statistic (exponent α = 1)
//
//	Ê = 2/(mk) Σ|X_i−Y_j| − C(m,2)⁻¹ Σ_{i<l}|X_i−X_l| − C(k,2)⁻¹ Σ_{j<l}|Y_j−Y_l|
//	Q̂ = mk/(m+k) · Ê
//
// with m and k the sizes of X and Y. This is the within-segment form (the
// second part always runs to the segment's end), the variant MongoDB's
// signal-processing library uses, not the paper's full search over the
// end κ of the second part. The pairwise distances are computed once per
// segment and Q̂ of every split is built up with running sums, so scoring
// one order of n points costs n²/2 additions.
//
// The best split is significant when a permutation test says so: the
// segment's values are shuffled Permutations (R) times with a seeded PCG
// (math/rand/v2, from Options.Seed, the segment and the test: the same
// series always gives the same answer), and
//
//	p = (1 + #{shuffles whose best Q̂ ≥ the observed one}) / (R + 1).
//
// The split is accepted when p ≤ Alpha, and the two new segments are
// tested in turn, each at the same Alpha (binary segmentation), until no
// segment splits. The shuffling stops as soon as enough shuffles reach the
// observed statistic for p to exceed Alpha (curtailed sampling): the
// verdict is the one all R shuffles would give, and a segment without a
// change costs a few dozen shuffles instead of R.
//
// Since no split leaves fewer than MinSize (default 3) points on a side,
// a change in the last MinSize−1 nights cannot be reported yet: it shows
// once the series has MinSize nights after it.
//
// A permutation test cannot be more certain than its number of distinct
// orders allows: a split of 10 points into 5 and 5 reaches at best
// p = 2/C(10,5) = 2/252 ≈ 0.008, above the default Alpha. With the
// defaults a step is confirmed once the segments either side are large
// enough that 2/C(m+k, m) is well below Alpha — about 6 points either
// side, or 3 after a change in a series of 20 or more. Short series need a
// larger Alpha (0.02 finds a ×1.5 step at night 5 of 10 every time), at
// the price of more false alarms.
//
// # Steps and trends
//
// A steady drift is not a chain of steps. Before a split is accepted, the
// step it describes (the median of each side) is compared with a straight
// line over the whole segment (Theil–Sen), by their sums of absolute
// deviations on the log scale — two models of two parameters each, fitted
// robustly. When the step fits better, the split is accepted. When the
// line fits better, the segment is a drift rather than a step, and the
// split is looked for again, with the same permutation test at the same
// Alpha, in the residuals from the line: a step on top of a drift is still
// found, and a pure drift is left whole.
//
// Each segment between change points with at least MinTrend (default 5)
// points is then tested for a monotonic trend with the Mann–Kendall test,
// two-sided: exact (the distribution of inversions of a random order) up
// to 10 points without ties, a permutation test with the seeded PCG up to
// 10 points with ties, and beyond 10 points the normal approximation with
// the tie correction of the variance and a continuity correction. Its
// slope is the Theil–Sen slope s of the log values (the median of the
// slopes of all pairs), reported as exp(s)−1 per step. A trend is reported
// when p ≤ TrendAlpha (default 0.01) and the relative slope is at least
// MinSlope (default 1% per step) either way. With the exact test, 5 points
// reach at best p = 2/120, so a trend needs 6 points at the default
// TrendAlpha.
//
// # Defaults and measured false-alarm rate
//
// Alpha = 0.005 is the chance that a series without any change shows one
// (the first test of a series is at level Alpha; the segments it would
// split are tested only after a false alarm). It was chosen against
// synthetic nights like the A/B runs' own spread on a shared two-core
// machine: base × exp(N(0, σ)), σ = 0.08 with 3% of nights ×U(1.3, 1.6)
// (a noisy neighbour), or σ = 0.03 without. Over 4,000 noise-only series
// of 30 nights each the false change points were 0.40% (σ = 0.08 with
// outliers) and 0.50% (σ = 0.03) per series, about one in 200 series, and
// there were no false trends in either. Over 4,000 series with a ×1.3
// step (σ = 0.08 with outliers) at a night drawn from 5–25, a change was
// found in 97.1%, within ±1 night of the step in 92.7% and within ±2 in
// 95.8%; in that noise the location itself is uncertain: an outlier just
// before a step looks like its first night, and even the best split of
// each series, significant or not, is within ±1 night in only about 95%.
// Alpha = 0.01 would find about 2% more of these steps and double the
// false alarms.
//
// Permutations = 999 gives p-values in steps of 0.001, fine enough for
// Alpha = 0.005 (a split is significant when at most 4 of the 999 shuffles
// reach it) and quick: a 30-night series with one step takes about 1 ms,
// a year of nights with two steps about 0.2 s (each accepted split costs
// R × n²/2 additions).
//
// go test -run TestCalibration -v prints the figures of the package's own
// calibration (200 series of each kind); CHANGEPOINT_LONG_RUN=1 go test
// -run TestLongRun -v measures the 4,000-series figures above.
package changepoint
