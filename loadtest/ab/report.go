package ab

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Markdown renders the report: the verdict and its reason, then one row per
// figure with its role (decides, reported, unjudged), each arm's median,
// the change with its interval, the p-value alone and after the Holm
// correction, and the answer the verdict reads.
func (r *Report) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	name := r.Scenario
	if name == "" {
		name = "A/B"
	}
	p("## %s: **%s**\n\n", name, r.Verdict)
	p("%s.\n\n", strings.TrimSuffix(r.Reason, "."))
	p("B (head) against A (base): %d and %d valid trials, interleaved. The %d figures that *decide* are judged together: a figure is *different* when the Mann-Whitney U test is significant after the Holm correction over all of them (family α %g) and the change is beyond what matters, *same* when its whole confidence interval is within that band; a regression asks for the whole interval beyond the band. *Reported* figures are judged alone (α %g) and do not decide; *unjudged* ones had too few samples in a trial.\n\n",
		r.Trials[0], r.Trials[1], r.Deciding, FamilyAlpha, Rule{}.withDefaults().Alpha)
	if len(r.Figures) > 0 {
		p("| Role | Figure | A median | B median | B vs A (CI) | p | Holm p | Answer |\n|---|---|---:|---:|---|---:|---:|---|\n")
		for _, f := range r.Figures {
			c := f.Comparison
			change := "–"
			switch {
			case !math.IsNaN(c.Ratio):
				change = fmt.Sprintf("×%.3g (×%.3g–×%.3g)", c.Ratio, c.RatioLo, c.RatioHi)
			case !math.IsNaN(c.Delta):
				change = fmt.Sprintf("%+.3g (%+.3g…%+.3g)", c.Delta, c.DeltaLo, c.DeltaHi)
			}
			p("| %s | %s | %s %s | %s %s | %s | %s | %s | %s |\n", f.role(), f.Name, formatNum(c.A.Median), f.Unit, formatNum(c.B.Median), f.Unit,
				change, formatP(c.P), formatP(f.PHolm), f.answerText())
		}
	}
	if r.MissedUpTo != nil {
		p("\nThese trials %s: a change that size would have passed as %s.\n", r.MissedUpTo, r.Verdict)
	}
	var unjudged []string
	for _, f := range r.Figures {
		if f.Answer == Unjudged {
			unjudged = append(unjudged, fmt.Sprintf("%s (%s)", f.Name, f.Unjudged))
		}
	}
	if len(unjudged) > 0 {
		p("\nUnjudged, too few samples: %s.\n", strings.Join(unjudged, "; "))
	}
	if len(r.Rejected) > 0 {
		p("\nTrials left out:\n\n")
		for _, s := range r.Rejected {
			p("- %s\n", s)
		}
	}
	return b.String()
}

// role is the figure's part in the verdict, as the Markdown table shows it.
func (f FigureResult) role() string {
	switch {
	case f.Answer == Unjudged:
		return "unjudged"
	case f.Primary:
		return "**decides**"
	}
	return "reported"
}

// answerText is the figure's answer in the Markdown table.
func (f FigureResult) answerText() string {
	switch {
	case f.Answer == Unjudged:
		return "–"
	case f.Worse():
		return "**worse**"
	case f.Better():
		return "better"
	case f.Answer != f.Comparison.Answer:
		return fmt.Sprintf("%s (%s alone)", f.Answer, f.Comparison.Answer)
	}
	return string(f.Answer)
}

func formatP(p float64) string {
	if math.IsNaN(p) {
		return "–"
	}
	return fmt.Sprintf("%.2g", p)
}

// MarshalJSON writes the report with each figure's comparison; values that
// are not numbers (NaN, ±Inf: an undefined ratio, an open interval) are
// null. "answer", "worse" and "better" are as the verdict reads them (after
// the correction for a primary figure), "answer_alone" the figure's
// answer at its own Rule.Alpha.
func (f FigureResult) MarshalJSON() ([]byte, error) {
	type figure FigureResult
	c := f.Comparison
	return json.Marshal(struct {
		figure
		Answer      Answer   `json:"answer"`
		AnswerAlone Answer   `json:"answer_alone"`
		MedianA     *float64 `json:"median_a"`
		MedianB     *float64 `json:"median_b"`
		Ratio       *float64 `json:"ratio"`
		RatioLo     *float64 `json:"ratio_lo"`
		RatioHi     *float64 `json:"ratio_hi"`
		Delta       *float64 `json:"delta"`
		DeltaLo     *float64 `json:"delta_lo"`
		DeltaHi     *float64 `json:"delta_hi"`
		P           *float64 `json:"p"`
		PHolm       *float64 `json:"p_holm"`
		Reason      string   `json:"reason"`
		Worse       bool     `json:"worse"`
		Better      bool     `json:"better"`
		Comparison  struct{} `json:"-"`
	}{figure: figure(f), Answer: f.Answer, AnswerAlone: c.Answer, MedianA: num(c.A.Median), MedianB: num(c.B.Median),
		Ratio: num(c.Ratio), RatioLo: num(c.RatioLo), RatioHi: num(c.RatioHi),
		Delta: num(c.Delta), DeltaLo: num(c.DeltaLo), DeltaHi: num(c.DeltaHi), P: num(c.P), PHolm: num(f.PHolm),
		Reason: c.Reason, Worse: f.Worse(), Better: f.Better()})
}

// MarshalJSON writes m with an open bound (±Inf) as null.
func (m *Missed) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Figure  string   `json:"figure"`
		Change  *float64 `json:"change"`
		RatioLo *float64 `json:"ratio_lo"`
		RatioHi *float64 `json:"ratio_hi"`
	}{m.Figure, num(m.Change), num(m.RatioLo), num(m.RatioHi)})
}

func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
