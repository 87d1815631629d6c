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
	// Regressed: a primary figure is different and worse in B, the whole
	// interval of its change beyond what matters.
	Regressed Verdict = "regressed"
	// Undecided: no primary figure is shown worse by what matters, but one
	// points that way with some evidence (p < 0.05), or too few trials were
	// valid: run more trials.
	Undecided Verdict = "inconclusive"
	// Improved: a primary figure is different and better, none worse.
	Improved Verdict = "improved"
	// Unchanged: no primary figure moved by what matters.
	Unchanged Verdict = "unchanged"
)

// suspectP is the p-value below which an inconclusive figure whose change
// points the worse way, beyond what matters, makes the verdict undecided:
// some evidence, not enough for Alpha. Above it, the figure's estimate is
// noise as far as these trials can tell.
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
	// Figures holds every figure, primary ones first.
	Figures []FigureResult `json:"figures"`
	// Verdict is the answer from the primary figures, and Reason why.
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason"`
}

// FigureResult is one figure's values in each arm and their comparison.
type FigureResult struct {
	Figure
	// A and B are the figure's value in each valid trial of the arm.
	A []float64 `json:"a"`
	B []float64 `json:"b"`
	// Comparison judges B against A.
	Comparison Comparison `json:"-"`
}

// CompareResults compares the results of one scenario's trials, a from arm
// A (base) and b from arm B (head), each figure with its own band of what
// matters. Results with no valid step (invalid or incomplete) are left out
// and listed in Rejected.
func CompareResults(scenario string, a, b []*loadtest.Result) *Report {
	return Config{}.CompareResults(scenario, a, b)
}

// CompareResults is the package's CompareResults with cfg.Matters widening
// every figure's band of what matters; the other fields play no part.
func (cfg Config) CompareResults(scenario string, a, b []*loadtest.Result) *Report {
	rep := &Report{Scenario: scenario}
	var vals [2][]figureValues
	var figs []Figure
	for arm, rs := range [2][]*loadtest.Result{a, b} {
		for i, res := range rs {
			fv, ok := figuresOf(res)
			if !ok {
				rep.Rejected = append(rep.Rejected, fmt.Sprintf("%s result %d: %s, no valid step", Arm(arm), i+1, res.Verdict))
				continue
			}
			rep.Trials[arm]++
			vals[arm] = append(vals[arm], fv)
			for _, f := range fv.figures {
				if !slices.ContainsFunc(figs, func(g Figure) bool { return g.Name == f.Name }) {
					figs = append(figs, f)
				}
			}
		}
	}
	slices.SortStableFunc(figs, func(x, y Figure) int {
		switch {
		case x.Primary == y.Primary:
			return 0
		case x.Primary:
			return -1
		}
		return 1
	})
	for _, f := range figs {
		if cfg.Matters > f.Rule.withDefaults().Relative {
			f.Rule.Relative = cfg.Matters
		}
		fr := FigureResult{Figure: f}
		for _, fv := range vals[0] {
			if v, ok := fv.values[f.Name]; ok {
				fr.A = append(fr.A, v)
			}
		}
		for _, fv := range vals[1] {
			if v, ok := fv.values[f.Name]; ok {
				fr.B = append(fr.B, v)
			}
		}
		fr.Comparison = Compare(fr.A, fr.B, f.Rule)
		rep.Figures = append(rep.Figures, fr)
	}
	rep.Verdict, rep.Reason = rep.decide()
	return rep
}

// decide derives the verdict from the primary figures.
func (r *Report) decide() (Verdict, string) {
	if r.Trials[0] < 2 || r.Trials[1] < 2 {
		return Undecided, fmt.Sprintf("too few valid trials (A %d, B %d) to compare", r.Trials[0], r.Trials[1])
	}
	var worse, suspect, better []string
	for _, f := range r.Figures {
		if !f.Primary {
			continue
		}
		c := f.Comparison
		switch {
		case c.Worse(f.Direction) && f.surelyWorse():
			worse = append(worse, f.describe())
		case c.Worse(f.Direction) || (c.Answer == Inconclusive && f.pointsWorse() && c.P < suspectP):
			suspect = append(suspect, f.describe())
		case c.Better(f.Direction):
			better = append(better, f.describe())
		}
	}
	switch {
	case len(worse) > 0:
		return Regressed, "worse in B: " + strings.Join(worse, "; ")
	case len(suspect) > 0:
		return Undecided, "possibly worse in B, not shown with these trials: " + strings.Join(suspect, "; ") + " — run more trials"
	case len(better) > 0:
		return Improved, "better in B: " + strings.Join(better, "; ")
	}
	return Unchanged, "no primary figure moved by what matters"
}

// unsettled reports whether more trials could make the verdict worse: it
// is undecided, or short of a regression a primary figure is inconclusive
// with its estimate worse by more than what matters.
func (r *Report) unsettled() bool {
	switch r.Verdict {
	case Regressed:
		return false
	case Undecided:
		return true
	}
	for _, f := range r.Figures {
		if f.Primary && f.Comparison.Answer == Inconclusive && f.pointsWorse() {
			return true
		}
	}
	return false
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

// describe renders a figure's change: "cpu/ok relay 212 → 431 µs (×2.03, 95% CI ×1.95–×2.10, p=0.008)".
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
