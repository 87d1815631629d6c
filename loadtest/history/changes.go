package history

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/changepoint"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Figure is one of a run's figures as an A/B trial yields them (see
// [ab.Measures]): throughput, failures, p50/p95/p99 per request kind, CPU
// per success and memory per component. A history keeps them per row so
// that a change in any of them shows over the nights, not only in the
// capacity.
type Figure struct {
	Name  string  `json:"name"`
	Unit  string  `json:"unit"`
	Value float64 `json:"value"`
	// HigherIsBetter is set for throughput; for the rest lower is better.
	HigherIsBetter bool `json:"higher_is_better,omitempty"`
	// Harness marks a cost of the harness (ab.Figure.Harness): its
	// changes are told, as the machine's, and never bisected.
	Harness bool `json:"harness,omitempty"`
}

// figuresOf returns the figures of a result's measures.
func figuresOf(ms []ab.Measure) []Figure {
	var out []Figure
	for _, m := range ms {
		out = append(out, Figure{Name: m.Name, Unit: m.Unit, Value: m.Value, HigherIsBetter: m.Direction == ab.HigherIsBetter, Harness: m.Harness})
	}
	return out
}

// CapacityFigure is the name under which a row's capacity enters the
// change search.
const CapacityFigure = "capacity"

// Finding is a change found in one figure's series over a scenario's
// comparable rows: a step between two nights, or a drift over several.
type Finding struct {
	Scenario string
	Figure   string
	Unit     string
	// Step is set for a change point, clear for a trend.
	Step bool
	// Worse says whether the change goes the wrong way for the figure
	// (a higher latency or cost, a lower throughput or capacity).
	Worse bool
	// Harness is set for a figure of the harness's own cost (the
	// generator's CPU, the proxy's memory): a change in it is the
	// machine's as much as the build's, told but not bisected, and not
	// counted as the system's change for the worse.
	Harness bool
	// Before and After are the rows either side of a step: the last night
	// of the old level and the first night of the new one. For a trend,
	// the first and last night of the drift.
	Before, After Row
	// Ratio is the new level over the old (a step), or the fitted change
	// over the whole drift (a trend).
	Ratio float64
	// Old and New are a step's levels: the medians of the nights before
	// and after it (back to the previous change, on to the next).
	Old, New float64
	// PerNight is a trend's relative slope per night (0.03 = +3%/night).
	PerNight float64
	// Nights is how many nights the series held.
	Nights int
	// P is the test's p-value: the permutation test's for a step, the
	// Mann-Kendall test's for a trend.
	P float64
	// LowerBound is set when a capacity figure of the rows is a lower
	// bound ("≥ N").
	LowerBound bool
}

// String says the finding in a sentence.
func (f Finding) String() string {
	bound := ""
	if f.LowerBound {
		bound = " (lower bounds: ≥)"
	}
	if f.Step {
		return fmt.Sprintf("%s: %s stepped ×%.2f between the nights of commits %s and %s%s (median %s → %s; p=%.3g; %s)",
			f.Scenario, f.Figure, f.Ratio, commitLabel(f.Before), commitLabel(f.After), bound,
			level(f.Old, f.Unit), level(f.New, f.Unit), f.P, f.verdict())
	}
	return fmt.Sprintf("%s: %s drifts %+.1f%%/night over the nights of commits %s…%s (%d nights, ×%.2f in all; p=%.3g; %s)",
		f.Scenario, f.Figure, f.PerNight*100, commitLabel(f.Before), commitLabel(f.After), f.Nights, f.Ratio, f.P, f.verdict())
}

func (f Finding) verdict() string {
	w := "better"
	if f.Worse {
		w = "worse"
	}
	if f.Harness {
		w += "; the harness's own cost, which moves with the machine: not bisected"
	}
	return w
}

func commitLabel(r Row) string {
	c := r.Commit
	if len(c) > 7 {
		c = c[:7]
	}
	if c == "" {
		c = "(no commit)"
	}
	return fmt.Sprintf("`%s` (%s)", c, r.Date.UTC().Format("2006-01-02"))
}

func level(v float64, unit string) string {
	if unit != "" {
		return fmt.Sprintf("%.4g %s", v, unit)
	}
	return fmt.Sprintf("%.4g", v)
}

// Value returns the value of the named figure of the row ([CapacityFigure]
// for its capacity).
func (r Row) Value(name string) (float64, bool) {
	if name == CapacityFigure {
		return r.Capacity, r.Capacity > 0
	}
	for _, f := range r.Figures {
		if f.Name == name {
			return f.Value, true
		}
	}
	return 0, false
}

// ChangeOptions steer [Changes].
type ChangeOptions struct {
	// Detector's settings; zero fields take changepoint's defaults.
	Detector changepoint.Options
	// MinNights is the fewest comparable nights a series needs before it
	// is searched (default 6).
	MinNights int
	// Floor is, per unit, the smallest level a figure must reach for its
	// changes to be reported: a failure rate of 0.01% tripling is noise
	// (default: failures under 0.5% and latencies under 1 ms are left out).
	Floor map[string]float64
}

var defaultFloor = map[string]float64{"%": 0.5, "ms": 1}

// Changes searches each figure of each scenario's history (matching
// scenario, see [Matches]) for steps and drifts, over every stretch of
// comparable rows (a row that does not compare with the one before it
// starts a new stretch; invalid rows are left out). Rows of one commit in
// a row — a night run twice — each count as a night. Findings come in
// scenario order, then figure order, steps before trends.
func Changes(rows []Row, scenario string, o ChangeOptions) ([]Finding, error) {
	if o.MinNights == 0 {
		o.MinNights = 6
	}
	if o.Floor == nil {
		o.Floor = defaultFloor
	}
	desc := Order(rows, scenario)
	asc := make([]Row, 0, len(desc))
	for i := len(desc) - 1; i >= 0; i-- {
		asc = append(asc, desc[i])
	}
	byScenario := map[string][]Row{}
	var names []string
	for _, r := range asc {
		if _, ok := byScenario[r.Scenario]; !ok {
			names = append(names, r.Scenario)
		}
		byScenario[r.Scenario] = append(byScenario[r.Scenario], r)
	}
	slices.Sort(names)
	var out []Finding
	for _, name := range names {
		for _, stretch := range stretches(byScenario[name]) {
			found, err := stretchChanges(stretch, o)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, found...)
		}
	}
	return out, nil
}

// stretches cuts a scenario's rows (oldest first) where a row does not
// compare with the one before it, leaving invalid and incomplete rows out.
func stretches(rows []Row) [][]Row {
	var out [][]Row
	var cur []Row
	for i, r := range rows {
		if i > 0 && !r.Comparable {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
		}
		if r.Verdict == result.Invalid || r.Verdict == result.Incomplete || r.Partial {
			continue
		}
		cur = append(cur, r)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// figureNames lists the figures of a stretch in the order they first
// appear, capacity first.
func figureNames(rows []Row) (names []string, units map[string]string, higher, harness map[string]bool) {
	units, higher, harness = map[string]string{CapacityFigure: rows[0].Unit}, map[string]bool{CapacityFigure: true}, map[string]bool{}
	names = []string{CapacityFigure}
	for _, r := range rows {
		for _, f := range r.Figures {
			if _, ok := units[f.Name]; !ok {
				names = append(names, f.Name)
				units[f.Name], higher[f.Name], harness[f.Name] = f.Unit, f.HigherIsBetter, f.Harness
			}
		}
	}
	return names, units, higher, harness
}

func stretchChanges(rows []Row, o ChangeOptions) ([]Finding, error) {
	if len(rows) < o.MinNights {
		return nil, nil
	}
	names, units, higher, harness := figureNames(rows)
	var out []Finding
	for _, name := range names {
		var series []float64
		var at []Row
		bound := false
		for _, r := range rows {
			v, ok := r.Value(name)
			if !ok || v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			series = append(series, v)
			at = append(at, r)
			bound = bound || name == CapacityFigure && r.LowerBound
		}
		if len(series) < o.MinNights {
			continue
		}
		if floor, ok := o.Floor[units[name]]; ok && slices.Max(series) < floor {
			continue
		}
		a, err := changepoint.Analyze(series, o.Detector)
		if err != nil {
			return nil, fmt.Errorf("figure %s: %w", name, err)
		}
		for _, c := range a.Changes {
			up := c.Ratio > 1
			out = append(out, Finding{
				Scenario: rows[0].Scenario, Figure: name, Unit: units[name], Step: true,
				Worse: up != higher[name], Harness: harness[name], Before: at[c.Index-1], After: at[c.Index],
				Ratio: c.Ratio, Old: c.Before, New: c.After, Nights: len(series), P: c.P, LowerBound: bound,
			})
		}
		for _, t := range a.Trends {
			up := t.PerStep > 0
			out = append(out, Finding{
				Scenario: rows[0].Scenario, Figure: name, Unit: units[name],
				Worse: up != higher[name], Harness: harness[name], Before: at[t.From], After: at[t.To],
				Ratio: t.Total, PerNight: t.PerStep, Nights: t.To - t.From + 1, P: t.P, LowerBound: bound,
			})
		}
	}
	return out, nil
}

// FindingsMarkdown renders findings as a list for a job summary or a
// report; "" when there are none.
func FindingsMarkdown(fs []Finding) string {
	if len(fs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	return b.String()
}
