package ab

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headroom-dev/headroom/loadtest"
)

// Verdict is the answer of a whole comparison, from its primary figures.
type Verdict string

// The verdicts, from the primary figures.
const (
	// Regressed: a primary figure is different and worse in B after the
	// correction for the number of primary figures, the whole interval
	// of its change beyond what matters.
	Regressed Verdict = "regressed"
	// Undecided: no primary figure is shown worse by what matters, but one
	// points that way with some evidence, or too few trials were valid:
	// run more trials.
	Undecided Verdict = "inconclusive"
	// Improved: a primary figure is different and better, none worse.
	Improved Verdict = "improved"
	// Unchanged: no primary figure moved by what matters.
	Unchanged Verdict = "unchanged"
)

// FamilyAlpha is the family-wise significance level of the primary
// figures: at one look, the chance that any of them is called different
// when none changed is at most 0.05 (Holm–Bonferroni over all of them),
// and each is also held to its own Rule.Alpha (0.01). A false regression
// asks more still: the worse direction, and the whole interval of the
// change beyond the band that does not matter.
//
// A complete separation of the arms — the best the trials can show — is
// significant among m primary figures once 2/C(2n, n)·m < 0.05: 5 trials
// per arm show it among at most 6 figures, 6 trials among 23, 7 among 85.
// A scenario with three request kinds has 13 or so primary figures, so a
// figure worse by what matters at every trial shows at the sixth trial
// per arm, one stray trial among ten costs about ten of the 100 pairs,
// and that is why Run extends an unsettled comparison up to MaxTrials
// (default 10 per arm) rather than judging five trials alone.
const FamilyAlpha = 0.05

// suspectP is the p-value below which a figure whose change points the
// worse way, beyond what matters, is some evidence of a regression: it
// makes the verdict undecided when its Holm-adjusted p is below it too, or
// when its raw p is and its whole interval lies beyond the band (a change
// these trials see clearly, but too few of them to carry the correction).
const suspectP = 0.05

// severity orders verdicts from the best to the worst, for the overall
// verdict of several reports.
var severity = map[Verdict]int{Improved: 0, Unchanged: 1, Undecided: 2, Regressed: 3}

// Worst returns the worst verdict of the reports: a regression anywhere is a
// regression.
func Worst(reports []*Report) Verdict {
	v := Improved
	if len(reports) == 0 {
		return Undecided
	}
	for _, r := range reports {
		if severity[r.Verdict] > severity[v] {
			v = r.Verdict
		}
	}
	return v
}

// Report is the comparison of one scenario's trials, arm B (head) against
// arm A (base).
type Report struct {
	// Scenario is the results' scenario name.
	Scenario string `json:"scenario"`
	// Trials is how many valid trials each arm contributed.
	Trials [2]int `json:"trials"`
	// Rejected lists the trials left out and why (invalid, incomplete,
	// failed to run).
	Rejected []string `json:"rejected,omitempty"`
	// Figures holds every figure: primary ones first, then the reported
	// ones, then the unjudged ones (too few samples).
	Figures []FigureResult `json:"figures"`
	// Deciding is the number of primary figures judged: the family among
	// which the Holm correction shares FamilyAlpha.
	Deciding int `json:"deciding"`
	// Verdict is the answer from the primary figures, and Reason why.
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
	// MissedUpTo is, for an unchanged or improved verdict, the largest
	// worsening of a primary figure its interval leaves open, among the
	// figures not shown the same when there are any; nil for the other
	// verdicts.
	MissedUpTo *Missed `json:"missed_up_to,omitempty"`
	// Stop says how Run ended the trials, e.g. "settled after 7 trials per
	// arm" or "stopped at max trials (10 per arm) with p99 get still
	// inconclusive"; empty from CompareResults.
	Stop string `json:"stop,omitempty"`
}

// FigureResult is one figure's values in each arm and their comparison.
type FigureResult struct {
	Figure
	// A and B are the figure's value in each valid trial of the arm.
	A []float64 `json:"a"`
	B []float64 `json:"b"`
	// Answer is the figure's answer as the verdict reads it: Unjudged for
	// an unjudged figure; for a primary one Comparison.Answer, except that
	// Different asks PHolm < FamilyAlpha too; for a reported one
	// Comparison.Answer.
	Answer Answer `json:"-"`
	// PHolm is the Holm-adjusted p-value of a primary figure among the
	// Deciding ones; NaN for the others.
	PHolm float64 `json:"-"`
	// Comparison judges B against A, this figure alone at its Rule.Alpha.
	Comparison Comparison `json:"-"`
}

// Unjudged is the answer of a figure with too few samples to be judged.
const Unjudged Answer = "unjudged"

// Worse reports whether the figure's Answer is Different in the bad
// direction.
func (f FigureResult) Worse() bool { return f.Answer == Different && f.Comparison.Worse(f.Direction) }

// Better reports whether the figure's Answer is Different in the good
// direction.
func (f FigureResult) Better() bool { return f.Answer == Different && f.Comparison.Better(f.Direction) }

// CompareResults compares the results of one scenario's trials, a from arm
// A (base) and b from arm B (head), each figure with its own band of what
// matters. Results with no valid step (invalid or incomplete) are left out
// and listed in Rejected.
func CompareResults(scenario string, a, b []*loadtest.Result) *Report {
	return Config{}.CompareResults(scenario, a, b)
}

// CompareResults is the package's CompareResults with cfg.Matters widening
// every figure's band of what matters and cfg.Primary naming the figures
// that decide; the other fields play no part. A name of cfg.Primary that
// is no figure of the results makes the verdict undecided.
func (cfg Config) CompareResults(scenario string, a, b []*loadtest.Result) *Report {
	var vals [2][]figureValues
	var rejected []string
	for arm, rs := range [2][]*loadtest.Result{a, b} {
		for i, res := range rs {
			fv, ok := figuresOf(res)
			if !ok {
				rejected = append(rejected, fmt.Sprintf("%s result %d: %s, no valid step", Arm(arm), i+1, res.Verdict))
				continue
			}
			vals[arm] = append(vals[arm], fv)
		}
	}
	return cfg.compare(scenario, vals, rejected)
}

// compare judges the figures of the valid trials of each arm.
func (cfg Config) compare(scenario string, vals [2][]figureValues, rejected []string) *Report {
	rep := &Report{Scenario: scenario, Rejected: rejected, Trials: [2]int{len(vals[A]), len(vals[B])}}
	figs := cfg.roles(vals)
	for _, f := range figs {
		if cfg.Matters > f.Rule.withDefaults().Relative {
			f.Rule.Relative = cfg.Matters
		}
		fr := FigureResult{Figure: f, PHolm: math.NaN()}
		for arm, out := range [2]*[]float64{&fr.A, &fr.B} {
			for _, fv := range vals[arm] {
				if v, ok := fv.values[f.Name]; ok {
					*out = append(*out, v)
				}
			}
		}
		fr.Comparison = Compare(fr.A, fr.B, f.Rule)
		fr.Answer = fr.Comparison.Answer
		if f.Unjudged != "" {
			fr.Answer = Unjudged
		}
		rep.Figures = append(rep.Figures, fr)
	}
	rep.correct()
	if unknown := unknownFigures(cfg.Primary, figs); len(unknown) > 0 {
		rep.Verdict, rep.Reason = Undecided, unknownError(scenario, unknown, figs).Error()
		return rep
	}
	rep.Verdict, rep.Reason = rep.decide()
	return rep
}

// roles returns the figures of the trials in the order they first
// appear, primary ones first and unjudged ones last, each marked primary
// (by default or by cfg.Primary) or unjudged (too few samples in a trial).
func (cfg Config) roles(vals [2][]figureValues) []Figure {
	var figs []Figure
	for _, arm := range vals {
		for _, fv := range arm {
			for _, f := range fv.figures {
				if !slices.ContainsFunc(figs, func(g Figure) bool { return g.Name == f.Name }) {
					figs = append(figs, f)
				}
			}
		}
	}
	for i := range figs {
		f := &figs[i]
		if len(cfg.Primary) > 0 {
			f.Primary = slices.Contains(cfg.Primary, f.Name)
		}
		if f.need == 0 || (len(cfg.Primary) > 0 && f.Primary) { // a figure named primary is judged
			continue
		}
		fewest := int64(math.MaxInt64)
		for _, arm := range vals {
			for _, fv := range arm {
				fewest = min(fewest, fv.samples[f.Name])
			}
		}
		if fewest < f.need {
			f.Primary = false
			f.Unjudged = fmt.Sprintf("%d %s in the sparsest trial, %d needed", fewest, f.needWhat, f.need)
		}
	}
	rank := func(f Figure) int {
		switch {
		case f.Primary:
			return 0
		case f.Unjudged == "":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(figs, func(x, y Figure) int { return rank(x) - rank(y) })
	return figs
}

// correct sets PHolm of every primary figure, Deciding, and the Answer of
// a primary figure significant alone but not among the Deciding ones to
// Inconclusive.
func (r *Report) correct() {
	var idx []int
	var ps []float64
	for i, f := range r.Figures {
		if f.Primary && f.Answer != Unjudged {
			idx = append(idx, i)
			ps = append(ps, f.Comparison.P)
		}
	}
	r.Deciding = len(idx)
	for j, p := range holm(ps) {
		f := &r.Figures[idx[j]]
		f.PHolm = p
		if f.Answer == Different && !(p < FamilyAlpha) {
			f.Answer = Inconclusive
		}
	}
}

// unknownFigures returns the names that are no figure of figs.
func unknownFigures(names []string, figs []Figure) []string {
	var out []string
	for _, n := range names {
		if !slices.ContainsFunc(figs, func(f Figure) bool { return f.Name == n }) {
			out = append(out, n)
		}
	}
	return out
}

// decide derives the verdict from the primary figures.
func (r *Report) decide() (Verdict, string) {
	if r.Trials[0] < 2 || r.Trials[1] < 2 {
		return Undecided, fmt.Sprintf("too few valid trials (A %d, B %d) to compare", r.Trials[0], r.Trials[1])
	}
	if r.Deciding == 0 {
		return Undecided, "no primary figure could be judged: too few samples in a trial (see the unjudged figures)"
	}
	var worse, suspect, better []string
	for _, f := range r.Figures {
		if !f.Primary || f.Answer == Unjudged {
			continue
		}
		switch {
		case f.Worse() && f.surelyWorse():
			worse = append(worse, f.describe())
		case f.Worse() || f.suspect():
			suspect = append(suspect, f.describe())
		case f.Better():
			better = append(better, f.describe())
		}
	}
	switch {
	case len(worse) > 0:
		return Regressed, "worse in B: " + strings.Join(worse, "; ")
	case len(suspect) > 0:
		return Undecided, "possibly worse in B, not shown with these trials: " + strings.Join(suspect, "; ") + " — run more trials"
	}
	r.MissedUpTo = r.missed()
	missed := ""
	if r.MissedUpTo != nil {
		missed = " — " + r.MissedUpTo.String()
	}
	if len(better) > 0 {
		return Improved, "better in B: " + strings.Join(better, "; ") + missed
	}
	return Unchanged, "no primary figure moved by what matters" + missed
}

// suspect reports whether the figure points worse beyond what matters
// with some evidence (suspectP): after the correction, or alone with its
// whole interval beyond the band.
func (f FigureResult) suspect() bool {
	c := f.Comparison
	return f.pointsWorse() && c.P < suspectP && (f.PHolm < suspectP || f.surelyWorse())
}

// open returns the names of the primary figures that more trials could
// settle: inconclusive, or different and worse but not by what matters
// for sure.
func (r *Report) open() []string {
	var out []string
	for _, f := range r.Figures {
		if f.Primary && (f.Answer == Inconclusive || (f.Worse() && !f.surelyWorse())) {
			out = append(out, f.Name)
		}
	}
	return out
}

// unsettled reports whether more trials could change the verdict: it is
// undecided, or short of a regression a primary figure is open — neither
// shown the same nor different (inconclusive, or different alone but not
// after the correction).
func (r *Report) unsettled() bool {
	switch r.Verdict {
	case Regressed:
		return false
	case Undecided:
		return true
	}
	return len(r.open()) > 0
}

// Missed is the largest worsening of a primary figure that a comparison
// could not rule out: the worse end of its interval.
type Missed struct {
	// Figure is the figure's name, e.g. "cpu/ok relay".
	Figure string `json:"figure"`
	// Change is the worse end of the interval as a fraction of A: +0.23
	// for a cost or latency up to 23% higher, −0.12 for a throughput up
	// to 12% lower; ±Inf when the interval is open (too few trials).
	Change float64 `json:"change"`
	// RatioLo and RatioHi bound the figure's ratio B/A, a pure number.
	RatioLo float64 `json:"ratio_lo"`
	RatioHi float64 `json:"ratio_hi"`

	higher bool // the figure's Direction is HigherIsBetter
}

// String renders what could have been missed: "could not rule out up to
// +23% cpu/ok relay (×0.83–×1.23)".
func (m *Missed) String() string {
	if math.IsInf(m.Change, 0) {
		return fmt.Sprintf("could not rule out any worsening of %s (its interval is open: too few trials)", m.Figure)
	}
	return fmt.Sprintf("could not rule out up to %+.0f%% %s (×%.3g–×%.3g)", 100*m.Change, m.Figure, m.RatioLo, m.RatioHi)
}

// missed returns the primary figure whose interval of the ratio B/A
// reaches furthest on its worse side, among those not shown the same when
// there are any, or nil when none has a ratio (a failure rate at zero has
// none; its interval is in the table). A figure shown the same has
// nothing that matters to miss, however wide its ratio — 0.18 → 0.26 ms
// of delivery wait is +45%, yet within an absolute band of 1 ms — so an
// open figure is named before it; when every figure was shown the same,
// the widest still says how fine the comparison was.
func (r *Report) missed() *Missed {
	if m := r.widest(func(f FigureResult) bool { return f.Answer != Same }); m != nil {
		return m
	}
	return r.widest(func(FigureResult) bool { return true })
}

// widest returns the primary figure among those keep accepts whose ratio
// interval reaches furthest on its worse side; nil when none has a ratio.
func (r *Report) widest(keep func(FigureResult) bool) *Missed {
	var out *Missed
	for _, f := range r.Figures {
		c := f.Comparison
		if !f.Primary || f.Answer == Unjudged || math.IsNaN(c.Ratio) || !keep(f) {
			continue
		}
		m := &Missed{Figure: f.Name, Change: c.RatioHi - 1, RatioLo: c.RatioLo, RatioHi: c.RatioHi}
		if f.Direction == HigherIsBetter {
			m.Change, m.higher = c.RatioLo-1, true
		}
		if out == nil || m.worse() > out.worse() {
			out = m
		}
	}
	return out
}

// worse is how much worse the figure could be, as a fraction: negative
// when its whole interval is on the better side.
func (m *Missed) worse() float64 {
	if m.higher {
		return -m.Change
	}
	return m.Change
}

// band is the change of a figure that does not matter, in its unit.
func (f FigureResult) band() float64 {
	return max(f.Rule.withDefaults().Relative*math.Abs(f.Comparison.A.Median), f.Rule.Absolute)
}

// pointsWorse reports whether the estimate of the change is in the worse
// direction and beyond the band that does not matter.
func (f FigureResult) pointsWorse() bool {
	c := f.Comparison
	if math.IsNaN(c.Delta) {
		return false
	}
	worse := c.Delta > 0
	if f.Direction == HigherIsBetter {
		worse = c.Delta < 0
	}
	return worse && math.Abs(c.Delta) >= f.band()
}

// surelyWorse reports whether the whole interval of the change lies beyond
// the band on the worse side: not only worse, but worse by what matters.
// A verdict of regression asks for it, so that a change at the edge of the
// band on a noisy machine is inconclusive rather than a false alarm.
func (f FigureResult) surelyWorse() bool {
	c := f.Comparison
	if f.Direction == HigherIsBetter {
		return c.DeltaHi <= -f.band()
	}
	return c.DeltaLo >= f.band()
}

// describe renders a figure's change: "cpu/ok relay 212 → 431 µs (×2.03,
// 95% CI ×1.95–×2.10, p=0.00058, Holm p=0.0076)".
func (f FigureResult) describe() string {
	c := f.Comparison
	s := fmt.Sprintf("%s %s → %s %s", f.Name, formatNum(c.A.Median), formatNum(c.B.Median), f.Unit)
	switch {
	case !math.IsNaN(c.Ratio):
		s += fmt.Sprintf(" (×%.3g, %s CI ×%.3g–×%.3g", c.Ratio, confidence(f.Rule), c.RatioLo, c.RatioHi)
	default:
		s += fmt.Sprintf(" (%+.3g %s, %s CI %+.3g…%+.3g", c.Delta, f.Unit, confidence(f.Rule), c.DeltaLo, c.DeltaHi)
	}
	if !math.IsNaN(c.P) {
		s += fmt.Sprintf(", p=%.2g", c.P)
	}
	if !math.IsNaN(f.PHolm) {
		s += fmt.Sprintf(", Holm p=%.2g", f.PHolm)
	}
	return s + ")"
}

func confidence(r Rule) string { return fmt.Sprintf("%g%%", r.withDefaults().Confidence*100) }

func formatNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}
