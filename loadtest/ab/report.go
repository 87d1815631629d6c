package ab

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Markdown renders the report: the verdict and its reason, then one row per
// figure with each arm's median, the change with its interval, the p-value
// and the answer; primary figures are marked with *.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	name := r.Scenario
	if name == "" {
		name = "A/B"
	}
	p("## %s: **%s**\n\n", name, r.Verdict)
	p("%s.\n\n", strings.TrimSuffix(r.Reason, "."))
	p("B (head) against A (base): %d and %d valid trials, interleaved. Primary figures (*) decide the verdict; a figure is *different* when the Mann-Whitney U test is significant and the change is beyond what matters, *same* when its whole confidence interval is within that band.\n\n", r.Trials[0], r.Trials[1])
	if len(r.Figures) > 0 {
		p("| | Figure | A median | B median | B vs A (CI) | p | Answer |\n|---|---|---:|---:|---|---:|---|\n")
		for _, f := range r.Figures {
			mark := ""
			if f.Primary {
				mark = "*"
			}
			c := f.Comparison
			change := "–"
			switch {
			case !math.IsNaN(c.Ratio):
				change = fmt.Sprintf("×%.3g (×%.3g–×%.3g)", c.Ratio, c.RatioLo, c.RatioHi)
			case !math.IsNaN(c.Delta):
				change = fmt.Sprintf("%+.3g (%+.3g…%+.3g)", c.Delta, c.DeltaLo, c.DeltaHi)
			}
			pv := "–"
			if !math.IsNaN(c.P) {
				pv = fmt.Sprintf("%.2g", c.P)
			}
			answer := string(c.Answer)
			switch {
			case c.Worse(f.Direction):
				answer = "**worse**"
			case c.Better(f.Direction):
				answer = "better"
			}
			p("| %s | %s | %s %s | %s %s | %s | %s | %s |\n", mark, f.Name, formatNum(c.A.Median), f.Unit, formatNum(c.B.Median), f.Unit, change, pv, answer)
		}
	}
	if len(r.Rejected) > 0 {
		p("\nTrials left out:\n\n")
		for _, s := range r.Rejected {
			p("- %s\n", s)
		}
	}
	return b.String()
}

// MarshalJSON writes the report with each figure's comparison; values that
// are not numbers (NaN, ±Inf: an undefined ratio, an open interval) are
// null.
func (f FigureResult) MarshalJSON() ([]byte, error) {
	type figure FigureResult
	c := f.Comparison
	return json.Marshal(struct {
		figure
		Answer     Answer   `json:"answer"`
		MedianA    *float64 `json:"median_a"`
		MedianB    *float64 `json:"median_b"`
		Ratio      *float64 `json:"ratio"`
		RatioLo    *float64 `json:"ratio_lo"`
		RatioHi    *float64 `json:"ratio_hi"`
		Delta      *float64 `json:"delta"`
		DeltaLo    *float64 `json:"delta_lo"`
		DeltaHi    *float64 `json:"delta_hi"`
		P          *float64 `json:"p"`
		Reason     string   `json:"reason"`
		Worse      bool     `json:"worse"`
		Better     bool     `json:"better"`
		Comparison struct{} `json:"-"`
	}{figure: figure(f), Answer: c.Answer, MedianA: num(c.A.Median), MedianB: num(c.B.Median),
		Ratio: num(c.Ratio), RatioLo: num(c.RatioLo), RatioHi: num(c.RatioHi),
		Delta: num(c.Delta), DeltaLo: num(c.DeltaLo), DeltaHi: num(c.DeltaHi), P: num(c.P),
		Reason: c.Reason, Worse: c.Worse(f.Direction), Better: c.Better(f.Direction)})
}

func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
