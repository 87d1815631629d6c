package ab

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"golang.org/x/perf/benchmath"
)

// Direction says which way a figure is better.
type Direction int

const (
	// LowerIsBetter is the direction of latency, cost and failure rate.
	LowerIsBetter Direction = iota
	// HigherIsBetter is the direction of throughput.
	HigherIsBetter
)

// Rule says how the two samples of one figure are judged; zero fields take the defaults.
type Rule struct {
	// Alpha is the significance level of the two-sided Mann-Whitney U test, a probability in (0, 1); 0 means 0.01.
	Alpha float64
	// Confidence is the coverage of the intervals of the change and of each median, a probability in (0, 1); 0 means 0.95.
	Confidence float64
	// Relative is the smallest change that matters as a fraction of arm A's median (0.05 = 5%); 0 means 0.05.
	Relative float64
	// Absolute is a change, in the figure's unit, below which no change matters (e.g. 0.001 s of latency); 0 means none.
	Absolute float64
}

func (r Rule) withDefaults() Rule {
	if r.Alpha == 0 {
		r.Alpha = 0.01
	}
	if r.Confidence == 0 {
		r.Confidence = 0.95
	}
	if r.Relative == 0 {
		r.Relative = 0.05
	}
	return r
}

func (r Rule) validate() error {
	switch {
	case !(r.Alpha > 0 && r.Alpha < 1):
		return fmt.Errorf("invalid Rule: Alpha=%g must be in (0, 1)", r.Alpha)
	case !(r.Confidence > 0 && r.Confidence < 1):
		return fmt.Errorf("invalid Rule: Confidence=%g must be in (0, 1)", r.Confidence)
	case !(r.Relative >= 0 && r.Absolute >= 0):
		return fmt.Errorf("invalid Rule: Relative=%g and Absolute=%g must be ≥ 0", r.Relative, r.Absolute)
	}
	return nil
}

// Answer is the judgement of one figure: Same, Different or Inconclusive.
type Answer string

const (
	// Same means the whole interval of the change lies within the band that does not matter.
	Same Answer = "same"
	// Different means the change is significant at Alpha and its estimate is beyond the band that does not matter.
	Different Answer = "different"
	// Inconclusive means neither could be shown: more trials are needed.
	Inconclusive Answer = "inconclusive"
)

// Summary is one arm's sample: N finite values, their median and its confidence interval [Lo, Hi] in the figure's unit (a bound is ±Inf below 6 values at 95%).
type Summary struct {
	N              int
	Median, Lo, Hi float64
}

// Comparison is the judgement of one figure, arm B (head) against arm A (base).
type Comparison struct {
	// Answer is Same, Different or Inconclusive.
	Answer Answer
	// A and B summarise each arm.
	A, B Summary
	// Ratio is the Hodges–Lehmann estimate of B/A, a pure number, and [RatioLo, RatioHi] its Moses confidence interval; all NaN unless every value is > 0.
	Ratio, RatioLo, RatioHi float64
	// Delta is the Hodges–Lehmann estimate of B−A in the figure's unit, and [DeltaLo, DeltaHi] its Moses confidence interval.
	Delta, DeltaLo, DeltaHi float64
	// P is the p-value of the two-sided Mann-Whitney U test; NaN when not computed.
	P float64
	// Reason is one sentence saying why this answer.
	Reason string
}

// Worse reports whether c is Different in the bad direction for d.
func (c Comparison) Worse(d Direction) bool {
	return c.Answer == Different && c.rose() == (d == LowerIsBetter)
}

// Better reports whether c is Different in the good direction for d.
func (c Comparison) Better(d Direction) bool {
	return c.Answer == Different && c.rose() != (d == LowerIsBetter)
}

// rose reports whether the change was judged upwards, in the space the answer was decided in.
func (c Comparison) rose() bool {
	if !math.IsNaN(c.Ratio) {
		return c.Ratio > 1
	}
	return c.Delta > 0
}

// Compare judges figure samples a (arm A) and b (arm B) under r; NaN and ±Inf values are dropped, and neither slice is modified.
//
// The change is the Hodges–Lehmann estimate (the median of the n·m pairwise
// differences b_j − a_i) with the Moses interval (two order statistics of
// those differences, chosen from the exact null distribution of U). When every
// value is > 0 the differences are of logarithms, so the change is a ratio;
// otherwise they are of raw values. A change matters when it exceeds
// max(Relative·|median(A)|, Absolute) in the figure's unit.
func Compare(a, b []float64, r Rule) Comparison {
	nan := math.NaN()
	c := Comparison{Answer: Inconclusive, Ratio: nan, RatioLo: nan, RatioHi: nan, Delta: nan, DeltaLo: nan, DeltaHi: nan, P: nan}
	r = r.withDefaults()
	if err := r.validate(); err != nil {
		c.Reason = err.Error()
		return c
	}
	fa, fb := finite(a), finite(b)
	c.A, c.B = summarize(fa, r.Confidence), summarize(fb, r.Confidence)
	dropped := ""
	if len(fa) < len(a) || len(fb) < len(b) {
		dropped = fmt.Sprintf("dropped %d NaN/Inf values of A and %d of B; ", len(a)-len(fa), len(b)-len(fb))
	}
	c.Reason = dropped + c.judge(fa, fb, r)
	return c
}

// judge fills in the change, the p-value and the answer of c, and returns the reason.
func (c *Comparison) judge(a, b []float64, r Rule) string {
	n, m := len(a), len(b)
	if n < 2 || m < 2 {
		return fmt.Sprintf("need ≥ 2 values per arm, have %d (A) and %d (B)", n, m)
	}
	th := benchmath.Thresholds{CompareAlpha: r.Alpha}
	c.P = benchmath.AssumeNothing.Compare(benchmath.NewSample(a, &th), benchmath.NewSample(b, &th)).P // sorts a and b, already sorted

	k := mosesRank(n, m, r.Confidence)
	c.Delta, c.DeltaLo, c.DeltaHi = hodgesLehmann(a, b, k)
	ch := change{est: c.Delta, lo: c.DeltaLo, hi: c.DeltaHi, band: max(r.Relative*math.Abs(c.A.Median), r.Absolute)}
	if a[0] > 0 && b[0] > 0 { // a and b are sorted
		est, lo, hi := hodgesLehmann(logs(a), logs(b), k)
		c.Ratio, c.RatioLo, c.RatioHi = math.Exp(est), math.Exp(lo), math.Exp(hi)
		// |B−A| ≤ band in the figure's unit ⇔ |B/A − 1| ≤ band/median(A).
		ch = change{est: c.Ratio - 1, lo: c.RatioLo - 1, hi: c.RatioHi - 1, band: ch.band / c.A.Median, relative: true}
	}

	p := fmt.Sprintf("p=%.2g", c.P)
	switch {
	case a[0] == a[n-1] && b[0] == b[m-1] && a[0] == b[0]:
		c.Answer = Same
		return fmt.Sprintf("all values of both arms equal %g", a[0])
	case c.P < r.Alpha && math.Abs(ch.est) > ch.band && (ch.lo > 0 || ch.hi < 0):
		c.Answer = Different
		return fmt.Sprintf("%s < %g and %s is beyond the %s that matters", p, r.Alpha, ch.format(r.Confidence), ch.formatBand())
	case ch.lo >= -ch.band && ch.hi <= ch.band:
		c.Answer = Same
		return fmt.Sprintf("%s lies within the %s that does not matter (%s)", ch.format(r.Confidence), ch.formatBand(), p)
	case minP(n, m) >= r.Alpha:
		return fmt.Sprintf("need ≥ %d trials per arm to detect a difference at α=%g (have %d and %d), and %s is not within the %s that does not matter",
			trialsNeeded(r.Alpha), r.Alpha, n, m, ch.format(r.Confidence), ch.formatBand())
	case c.P < r.Alpha:
		return fmt.Sprintf("%s < %g but %s is not clearly beyond the %s that matters", p, r.Alpha, ch.format(r.Confidence), ch.formatBand())
	default:
		return fmt.Sprintf("%s ≥ %g and %s is not within the %s that does not matter", p, r.Alpha, ch.format(r.Confidence), ch.formatBand())
	}
}

// finite returns the finite values of xs, sorted, in a new slice.
func finite(xs []float64) []float64 {
	out := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

func logs(xs []float64) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Log(x)
	}
	return out
}

func summarize(xs []float64, confidence float64) Summary {
	if len(xs) == 0 {
		return Summary{Median: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	}
	s := benchmath.AssumeNothing.Summary(benchmath.NewSample(xs, nil), confidence) // xs is sorted
	return Summary{N: len(xs), Median: s.Center, Lo: s.Lo, Hi: s.Hi}
}

// change is the change of a figure in the space it is judged in: B/A − 1 when
// relative, else B − A in the figure's unit; est is the point estimate,
// [lo, hi] its interval and ±band the changes that do not matter.
type change struct {
	est, lo, hi, band float64
	relative          bool
}

// format renders the change and its interval, e.g. "+98% (95% CI +71%…+130%)".
func (ch change) format(confidence float64) string {
	return fmt.Sprintf("%s (%.3g%% CI %s…%s)", ch.num(ch.est), 100*confidence, ch.num(ch.lo), ch.num(ch.hi))
}

// formatBand renders the band of changes that do not matter, e.g. "±5%".
func (ch change) formatBand() string {
	if ch.relative {
		return fmt.Sprintf("±%.3g%%", 100*ch.band)
	}
	return fmt.Sprintf("±%.3g", ch.band)
}

func (ch change) num(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "+∞"
	case math.IsInf(x, -1):
		return "-∞"
	case !ch.relative:
		return fmt.Sprintf("%+.3g", x)
	case math.Abs(x) >= 1:
		return fmt.Sprintf("%+.0f%%", 100*x)
	default:
		return fmt.Sprintf("%+.3g%%", 100*x)
	}
}

// hodgesLehmann returns the median of the pairwise differences b_j − a_i and
// the Moses interval [D_(k), D_(nm+1−k)] of those sorted differences D
// (1-based); k = 0 gives (−∞, +∞).
func hodgesLehmann(a, b []float64, k int) (est, lo, hi float64) {
	d := make([]float64, 0, len(a)*len(b))
	for _, y := range b {
		for _, x := range a {
			d = append(d, y-x)
		}
	}
	slices.Sort(d)
	nm := len(d)
	est = (d[(nm-1)/2] + d[nm/2]) / 2
	if k == 0 {
		return est, math.Inf(-1), math.Inf(1)
	}
	return est, d[k-1], d[nm-k]
}

// exactLimit is the largest sample size for which mosesRank uses the exact
// distribution of U; above it, the normal approximation.
const exactLimit = 50

// mosesRank returns the largest k such that P(U ≤ k−1) ≤ (1−confidence)/2
// under the null hypothesis, for samples of n and m values without ties; 0
// when even k = 1 is too wide. Since U is symmetric, the interval
// [D_(k), D_(nm+1−k)] then covers the true shift with probability
// 1 − 2·P(U ≤ k−1) ≥ confidence.
func mosesRank(n, m int, confidence float64) int {
	if n > exactLimit || m > exactLimit {
		return mosesRankNormal(n, m, confidence)
	}
	tail := (1 - confidence) / 2
	k := 0
	for u, p := range uCDF(n, m) {
		if p > tail*(1+1e-9) { // the slack absorbs rounding of 1−confidence
			break
		}
		k = u + 1
	}
	return k
}

// mosesRankNormal is mosesRank with P(U ≤ u) ≈ Φ((u + ½ − nm/2)/σ), σ² = nm(n+m+1)/12.
func mosesRankNormal(n, m int, confidence float64) int {
	mu := float64(n*m) / 2
	sigma := math.Sqrt(float64(n*m*(n+m+1)) / 12)
	z := math.Sqrt2 * math.Erfinv(confidence) // Φ⁻¹(1 − (1−confidence)/2)
	return max(0, int(math.Floor(mu-z*sigma-0.5))+1)
}

// uCDF returns P(U ≤ u) for u = 0…n·m, where U is the number of pairs
// (a_i, b_j) with a_i > b_j when n values a and m values b, all distinct, are
// in random order.
func uCDF(n, m int) []float64 {
	// f[j] is the distribution of U for i a's and j b's. The largest of the
	// i+j values is an a with probability i/(i+j), and then adds the j pairs
	// it forms with the b's, or else a b, which adds none.
	f := make([][]float64, m+1)
	for j := range f {
		f[j] = []float64{1} // i = 0
	}
	for i := 1; i <= n; i++ {
		g := make([][]float64, m+1)
		g[0] = []float64{1}
		for j := 1; j <= m; j++ {
			pa, pb := float64(i)/float64(i+j), float64(j)/float64(i+j)
			h := make([]float64, i*j+1)
			for u, p := range f[j] {
				h[u+j] += pa * p
			}
			for u, p := range g[j-1] {
				h[u] += pb * p
			}
			g[j] = h
		}
		f = g
	}
	cdf := f[m]
	for u := 1; u < len(cdf); u++ {
		cdf[u] += cdf[u-1]
	}
	return cdf
}

// minP returns the smallest two-sided p-value of the Mann-Whitney U test for
// samples of n and m values: 2/C(n+m, n), reached when they do not overlap.
func minP(n, m int) float64 {
	c := 1.0
	for i := 1; i <= n; i++ {
		c = c * float64(m+i) / float64(i)
	}
	return min(1, 2/c)
}

// trialsNeeded returns the smallest n for which two samples of n values can
// give p < alpha.
func trialsNeeded(alpha float64) int {
	n := 2
	for minP(n, n) >= alpha {
		n++
	}
	return n
}

// holm returns the Holm–Bonferroni adjusted p-values of ps, in ps's order:
// with p_(1) ≤ … ≤ p_(m) the p-values sorted, p̃_(i) = max over j ≤ i of
// min(1, (m − j + 1)·p_(j)). A hypothesis is rejected at family-wise level
// α when its p̃ < α: the chance of rejecting any true one is at most α,
// whatever their dependence. A NaN p-value (not computed) counts as 1.
func holm(ps []float64) []float64 {
	m := len(ps)
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	p := func(i int) float64 {
		if math.IsNaN(ps[i]) {
			return 1
		}
		return ps[i]
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(p(x), p(y)) })
	adj := make([]float64, m)
	running := 0.0
	for rank, i := range order {
		running = max(running, min(1, float64(m-rank)*p(i)))
		adj[i] = running
	}
	return adj
}

// familyTrialsNeeded returns the smallest n for which two samples of n
// values that do not overlap are significant at alpha among m hypotheses
// under Holm, minP(n, n)·m < alpha, and alone at the default Rule.Alpha.
// At alpha 0.05 that is 5 trials per arm for up to 6 figures, 6 for 7–23
// and 7 for 24–85.
func familyTrialsNeeded(m int, alpha float64) int {
	return max(trialsNeeded(Rule{}.withDefaults().Alpha), trialsNeeded(alpha/float64(max(m, 1))))
}
