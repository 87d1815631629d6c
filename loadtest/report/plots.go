package report

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// What names the groups of figures [Plots] draws.
var What = []string{"latency", "throughput", "knee", "timeline", "resources", "delays", "all"}

// Plots returns the figures of res that what names (see [What]); kind is
// the request kind of the latency figures, "" for the primary kind (see
// [PrimaryKind]). It fails when the result holds nothing to draw them from.
func Plots(res *loadtest.Result, what, kind string) ([]*Figure, error) {
	if kind == "" {
		kind = res.PrimaryKind()
	}
	var figs []*Figure
	var notes []string
	add := func(f *Figure, note string) {
		if f != nil {
			figs = append(figs, f)
		} else if note != "" {
			notes = append(notes, note)
		}
	}
	switch what {
	case "latency":
		add(LatencyPlot(res, kind))
	case "throughput":
		add(ThroughputPlot(res))
	case "knee":
		add(KneePlot(res))
	case "timeline":
		fs, n := TimelinePlots(res, kind)
		figs, notes = append(figs, fs...), append(notes, n...)
	case "resources":
		fs, n := ResourcePlots(res)
		figs, notes = append(figs, fs...), append(notes, n...)
	case "delays":
		fs, n := DelayPlots(res)
		figs, notes = append(figs, fs...), append(notes, n...)
	case "all", "":
		return Figures(res, kind)
	default:
		return nil, fmt.Errorf("report: no figure %q; give one of %s", what, strings.Join(What, ", "))
	}
	if len(figs) == 0 {
		return nil, fmt.Errorf("report: nothing to plot for %q: %s", what, strings.Join(notes, "; "))
	}
	return figs, nil
}

// Figures returns every figure res has data for; notes say which were
// left out and why (an older result without a timeline, a ladder not a
// knee search, no observed kind). kind is the latency figures' request
// kind, "" for the primary one. The error is nil unless no figure at all
// could be drawn.
func Figures(res *loadtest.Result, kind string) ([]*Figure, error) {
	figs, notes := figures(res, kind)
	if len(figs) == 0 {
		return nil, fmt.Errorf("report: nothing to plot: %s", strings.Join(notes, "; "))
	}
	return figs, nil
}

func figures(res *loadtest.Result, kind string) ([]*Figure, []string) {
	if kind == "" {
		kind = res.PrimaryKind()
	}
	var figs []*Figure
	var notes []string
	one := func(f *Figure, note string) {
		if f != nil {
			figs = append(figs, f)
		} else if note != "" {
			notes = append(notes, note)
		}
	}
	many := func(fs []*Figure, n []string) {
		figs, notes = append(figs, fs...), append(notes, n...)
	}
	one(LatencyPlot(res, kind))
	one(ThroughputPlot(res))
	if res.Plan.Type == "knee" {
		one(KneePlot(res))
	}
	many(TimelinePlots(res, kind))
	many(ResourcePlots(res))
	many(DelayPlots(res))
	return figs, notes
}

// Bound is a latency bound parsed from a check's text.
type Bound struct {
	// Percentile is 95 for p95.
	Percentile float64
	// Bound is the latency the percentile must stay below.
	Bound time.Duration
	// Check is the check's text.
	Check string
}

// latencyCheck matches what loadtest.Latency prints: "p95 of tools/call < 15s".
var latencyCheck = regexp.MustCompile(`^p([0-9.]+) of (.+) < ((?:[0-9.]+(?:ns|us|µs|μs|ms|s|m|h))+)$`)

// LatencyBounds returns the latency bounds the result's checks put on
// kind, parsed from their text (see loadtest.LatencyBelow); none when no
// check bounds its latency.
func LatencyBounds(res *loadtest.Result, kind string) []Bound {
	var out []Bound
	for _, c := range res.Checks {
		m := latencyCheck.FindStringSubmatch(strings.TrimSpace(c))
		if m == nil || m[2] != kind {
			continue
		}
		p, err1 := strconv.ParseFloat(m[1], 64)
		d, err2 := time.ParseDuration(m[3])
		if err1 != nil || err2 != nil || d <= 0 {
			continue
		}
		out = append(out, Bound{Percentile: p, Bound: d, Check: c})
	}
	return out
}

// levelUnit is the unit of the result's load levels.
func levelUnit(res *loadtest.Result) string { return res.LevelUnit() }

func levelLabel(res *loadtest.Result) string { return "load level (" + levelUnit(res) + ")" }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// msLabel labels a latency tick in milliseconds.
func msLabel(v float64) string { return num(v) }

// stepsByLevel returns the steps in level order (a knee search probes out
// of order), stable among equal levels.
func stepsByLevel(res *loadtest.Result) []*loadtest.StepResult {
	steps := slices.Clone(res.Steps)
	slices.SortStableFunc(steps, func(a, b *loadtest.StepResult) int { return cmp.Compare(a.Step.Level, b.Step.Level) })
	return steps
}

// markLevels draws the capacity and the first failure as vertical lines.
func markLevels(p *plot.Plot, leg *plot.Legend, res *loadtest.Result) {
	if res.Capacity > 0 {
		v := vline{X: res.Capacity, Color: green, Dash: dashed, Width: vg.Points(1.5)}
		p.Add(v)
		leg.Add(capacityLabel(res), v)
	}
	if res.FirstFailure > 0 {
		v := vline{X: res.FirstFailure, Color: red, Dash: dashed, Width: vg.Points(1.5)}
		p.Add(v)
		leg.Add("first failure "+num(res.FirstFailure), v)
	}
}

// padX widens a plot's x range by 5% either side, so that marks at the
// ends are not cut off.
func padXRange(p *plot.Plot) {
	lo, hi := p.X.Min, p.X.Max
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return
	}
	d := (hi - lo) * 0.05
	if d == 0 {
		d = math.Max(math.Abs(lo)*0.1, 1)
	}
	p.X.Min, p.X.Max = lo-d, hi+d
}

// LatencyPlot draws p50, p95 and p99 of kind against the load level, on
// a log scale, with the SLO bounds the checks put on kind and the capacity
// and first failure marked. The note says why there is no figure.
func LatencyPlot(res *loadtest.Result, kind string) (*Figure, string) {
	if kind == "" {
		return nil, "latency against level: no request kind measured"
	}
	pcts := []struct {
		name string
		p    float64
		get  func(result.Latencies) time.Duration
	}{
		{"p50", 50, func(l result.Latencies) time.Duration { return l.P50 }},
		{"p95", 95, func(l result.Latencies) time.Duration { return l.P95 }},
		{"p99", 99, func(l result.Latencies) time.Duration { return l.P99 }},
	}
	series := make([]plotter.XYs, len(pcts))
	for _, s := range stepsByLevel(res) {
		k := s.Kind(kind)
		if k == nil || k.Answered() == 0 && k.Latency.P50 == 0 {
			continue
		}
		for i, pc := range pcts {
			if v := pc.get(k.Latency); v > 0 {
				series[i] = append(series[i], plotter.XY{X: s.Step.Level, Y: ms(v)})
			}
		}
	}
	if len(series[0]) == 0 {
		return nil, fmt.Sprintf("latency against level: no step answered a %s request yet", kind)
	}
	p := newPlot(fmt.Sprintf("%s latency by load level", kind), levelLabel(res), "latency (ms, log scale)")
	leg := newLegend()
	for i, pc := range pcts {
		addSeries(p, &leg, pc.name, series[i], colour(i), nil, true)
	}
	for _, b := range LatencyBounds(res, kind) {
		c := grey
		for i, pc := range pcts {
			if pc.p == b.Percentile {
				c = colour(i).(color.RGBA)
			}
		}
		h := hline{Y: ms(b.Bound), Color: c, Dash: dotted, Width: vg.Points(2)}
		p.Add(h)
		leg.Add(fmt.Sprintf("SLO p%s < %v", num(b.Percentile), b.Bound), h)
	}
	markLevels(p, &leg, res)
	padXRange(p)
	setLogY(p, msLabel)
	return &Figure{Name: "latency", Plot: p, Legend: leg}, ""
}

// verdictGlyphs draws each step's verdict at (level, y): pass a green
// circle, fail a red cross, invalid an orange triangle, incomplete a grey
// ring.
var verdictStyle = map[result.Verdict]draw.GlyphStyle{
	result.Pass:       {Color: green, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}},
	result.Fail:       {Color: red, Radius: vg.Points(4.5), Shape: draw.CrossGlyph{}},
	result.Invalid:    {Color: orange, Radius: vg.Points(4.5), Shape: draw.TriangleGlyph{}},
	result.Incomplete: {Color: grey, Radius: vg.Points(4), Shape: draw.RingGlyph{}},
}

var verdictOrder = []result.Verdict{result.Pass, result.Fail, result.Invalid, result.Incomplete}

// addVerdicts marks pts by verdict and adds a legend entry per verdict
// present.
func addVerdicts(p *plot.Plot, leg *plot.Legend, pts map[result.Verdict]plotter.XYs, suffix string) {
	for _, v := range verdictOrder {
		xys := pts[v]
		if len(xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			continue
		}
		s.GlyphStyle = verdictStyle[v]
		p.Add(s)
		leg.Add(string(v)+suffix, s)
	}
}

// ThroughputPlot draws the load offered and the successful answers per
// second (ok/s) against the load level, each step's verdict marked.
func ThroughputPlot(res *loadtest.Result) (*Figure, string) {
	var offered, achieved, ok plotter.XYs
	marks := map[result.Verdict]plotter.XYs{}
	for _, s := range stepsByLevel(res) {
		offered = append(offered, plotter.XY{X: s.Step.Level, Y: s.Offered})
		achieved = append(achieved, plotter.XY{X: s.Step.Level, Y: s.Achieved})
		ok = append(ok, plotter.XY{X: s.Step.Level, Y: s.Throughput})
		marks[s.Verdict] = append(marks[s.Verdict], plotter.XY{X: s.Step.Level, Y: s.Throughput})
	}
	if len(ok) == 0 {
		return nil, "throughput against level: no step measured yet"
	}
	p := newPlot("Throughput by load level", levelLabel(res), "rate (requests/s)")
	leg := newLegend()
	addSeries(p, &leg, "offered/s", offered, colour(0), dashed, false)
	addSeries(p, &leg, "answered/s", achieved, colour(7), dotted, false)
	addSeries(p, &leg, "ok/s", ok, colour(3), nil, false)
	addVerdicts(p, &leg, marks, " step")
	markLevels(p, &leg, res)
	padXRange(p)
	fromZero(p)
	return &Figure{Name: "throughput", Plot: p, Legend: leg}, ""
}

// KneePlot draws a knee search's probes in the order they ran, each
// probe's level marked pass, fail or invalid, the capacity and first
// failure as horizontal lines.
func KneePlot(res *loadtest.Result) (*Figure, string) {
	if res.Plan.Type != "knee" {
		return nil, ""
	}
	var path plotter.XYs
	marks := map[result.Verdict]plotter.XYs{}
	for i, s := range res.Steps {
		xy := plotter.XY{X: float64(i + 1), Y: s.Step.Level}
		path = append(path, xy)
		marks[s.Verdict] = append(marks[s.Verdict], xy)
	}
	if len(path) == 0 {
		return nil, "knee search: no probe measured yet"
	}
	p := newPlot("Knee search: probes in order", "probe (in the order run)", levelLabel(res))
	leg := newLegend()
	addSeries(p, &leg, "probe order", path, color.Gray{Y: 170}, dotted, false)
	addVerdicts(p, &leg, marks, "")
	if res.Capacity > 0 {
		h := hline{Y: res.Capacity, Color: green, Dash: dashed, Width: vg.Points(1.5)}
		p.Add(h)
		leg.Add(capacityLabel(res), h)
	}
	if res.FirstFailure > 0 {
		h := hline{Y: res.FirstFailure, Color: red, Dash: dashed, Width: vg.Points(1.5)}
		p.Add(h)
		leg.Add("first failure "+num(res.FirstFailure), h)
	}
	ticks := make(plot.ConstantTicks, len(path))
	for i := range path {
		ticks[i] = plot.Tick{Value: float64(i + 1), Label: strconv.Itoa(i + 1)}
	}
	p.X.Tick.Marker = ticks
	padXRange(p)
	fromZero(p)
	p.Y.Max *= 1.08
	return &Figure{Name: "knee", Plot: p, Legend: leg}, ""
}

var holdShade = color.NRGBA{0x1f, 0x77, 0xb4, 0x30}

// addPhases shades every hold (the only time measured) and marks where
// each step's ramp begins.
func addPhases(p *plot.Plot, leg *plot.Legend, tl *result.Timeline) {
	shaded := false
	var hold band
	for _, ph := range tl.Phases {
		switch ph.Name {
		case "hold":
			hold = band{From: ph.From, To: ph.To, Color: holdShade}
			p.Add(hold)
			shaded = true
		case "ramp":
			p.Add(vline{X: ph.From, Color: color.Gray{Y: 160}, Dash: dotted, Width: vg.Points(1)})
		}
	}
	if shaded {
		leg.Add("hold (measured)", hold)
	}
}

var faultShade = color.NRGBA{0xd6, 0x27, 0x28, 0x30}

// faultSpans are the applied faults of res (StepResult.Faults) on its
// timeline's axis, in seconds since the timeline's Start: from the
// injection to the clear, or to the end of the step's hold for a fault
// never cleared (a kill, a clear that failed) — to the last window's end
// when the hold has not ended.
func faultSpans(res *loadtest.Result) []faultBand {
	tl := res.Timeline
	if tl == nil {
		return nil
	}
	since := func(t time.Time) float64 { return t.Sub(tl.Start).Seconds() }
	var out []faultBand
	for _, s := range res.Steps {
		holdEnd := math.NaN()
		for _, ph := range tl.Phases {
			if ph.Step == s.Index && ph.Name == "hold" && ph.To >= ph.From {
				holdEnd = ph.To
			}
		}
		if math.IsNaN(holdEnd) && !s.End.IsZero() {
			holdEnd = since(s.End)
		}
		if n := tl.Len(); math.IsNaN(holdEnd) && n > 0 {
			holdEnd = tl.T[n-1]
		}
		for _, f := range s.Faults {
			if !f.Applied() {
				continue
			}
			from, to := since(f.Injected), holdEnd
			if !f.Cleared.IsZero() {
				to = since(f.Cleared)
			}
			if math.IsNaN(to) || to < from {
				to = from
			}
			out = append(out, faultBand{band: band{From: from, To: to, Color: faultShade}, Name: f.Name})
		}
	}
	// The names of faults that begin within an eighth of the run of each
	// other go on lines of their own.
	gap := 0.0
	if n := tl.Len(); n > 0 {
		gap = tl.T[n-1] / 8
	}
	for i := range out {
		for taken := true; taken; {
			taken = slices.ContainsFunc(out[:i], func(o faultBand) bool {
				return o.Row == out[i].Row && math.Abs(out[i].From-o.From) < gap
			})
			if taken {
				out[i].Row++
			}
		}
	}
	return out
}

// addFaults shades the time each fault of res was applied, with its name.
func addFaults(p *plot.Plot, leg *plot.Legend, res *loadtest.Result) {
	spans := faultSpans(res)
	for _, b := range spans {
		p.Add(b)
	}
	if len(spans) > 0 {
		leg.Add("fault applied", spans[0].band)
	}
}

// timeXY pairs a timeline's window ends with values, NaN where skip.
func timeXY(t []float64, n int, v func(i int) (float64, bool)) plotter.XYs {
	xys := make(plotter.XYs, 0, n)
	for i := 0; i < n && i < len(t); i++ {
		y, ok := v(i)
		if !ok {
			y = math.NaN()
		}
		xys = append(xys, plotter.XY{X: t[i], Y: y})
	}
	return xys
}

const noTimeline = "time series: this result has no timeline (written before timelines were kept, or with SeriesEvery < 0)"

// TimelinePlots draws the run over time from its Timeline: offered and
// answered rates; p50/p95/p99 of the primary kind (p95 of the other
// kinds); errors, dropped and in-flight requests — each with the holds
// shaded, every ramp's start marked and every fault applied shaded and
// named.
func TimelinePlots(res *loadtest.Result, kind string) ([]*Figure, []string) {
	tl := res.Timeline
	if tl == nil || tl.Len() == 0 {
		return nil, []string{noTimeline}
	}
	n := tl.Len()
	x := "time since the run's start (s)"
	var figs []*Figure

	p := newPlot("Request rates over the run", x, "rate (requests/s)")
	leg := newLegend()
	addPhases(p, &leg, tl)
	addFaults(p, &leg, res)
	addSeries(p, &leg, "offered/s", timeXY(tl.T, n, func(i int) (float64, bool) { return at(tl.Offered, i) }), colour(0), nil, false)
	addSeries(p, &leg, "answered/s", timeXY(tl.T, n, func(i int) (float64, bool) { return at(tl.Answered, i) }), colour(3), nil, false)
	fromZero(p)
	figs = append(figs, &Figure{Name: "timeline-rates", Plot: p, Legend: leg})

	// Requests and observed samples (fan-out delays) apart: their scales
	// differ by orders of magnitude and one legend would not fit them all.
	for _, part := range []struct {
		title, name string
		observed    bool
	}{
		{"Latency over the run", "timeline-latency", false},
		{"Observed delays over the run", "timeline-observed", true},
	} {
		p = newPlot(part.title, x, "latency (ms, log scale)")
		leg = newLegend()
		addPhases(p, &leg, tl)
		addFaults(p, &leg, res)
		drawn := false
		ci := 0
		for _, ks := range tl.Kinds {
			if ks.Observed != part.observed {
				continue
			}
			type pc struct {
				name string
				v    []int64
			}
			pcs := []pc{{"p95", ks.P95}}
			if ks.Kind == kind {
				pcs = []pc{{"p50", ks.P50}, {"p95", ks.P95}, {"p99", ks.P99}}
			}
			for _, c := range pcs {
				xys := timeXY(tl.T, n, func(i int) (float64, bool) {
					if i >= len(c.v) || c.v[i] <= 0 {
						return 0, false
					}
					return float64(c.v[i]) / 1000, true
				})
				var dash []vg.Length
				if ks.Kind != kind {
					dash = dashed
				}
				if addSeries(p, &leg, c.name+" "+ks.Kind, xys, colour(ci), dash, false) {
					drawn = true
				}
				ci++
			}
		}
		if drawn {
			setLogY(p, msLabel)
			figs = append(figs, &Figure{Name: part.name, Plot: p, Legend: leg})
		}
	}

	p = newPlot("Errors and requests in flight over the run", x, "requests (count)")
	leg = newLegend()
	addPhases(p, &leg, tl)
	addFaults(p, &leg, res)
	addSeries(p, &leg, "in flight", timeXY(tl.T, n, func(i int) (float64, bool) { return atI(tl.InFlight, i) }), colour(0), nil, false)
	addSeries(p, &leg, "errors per window", timeXY(tl.T, n, func(i int) (float64, bool) { return atI(tl.Errors, i) }), colour(2), nil, false)
	addSeries(p, &leg, "dropped per window", timeXY(tl.T, n, func(i int) (float64, bool) { return atI(tl.Dropped, i) }), colour(1), dashed, false)
	fromZero(p)
	figs = append(figs, &Figure{Name: "timeline-errors", Plot: p, Legend: leg})
	return figs, nil
}

func at(v []float64, i int) (float64, bool) {
	if i < len(v) {
		return v[i], true
	}
	return 0, false
}

func atI(v []int64, i int) (float64, bool) {
	if i < len(v) {
		return float64(v[i]), true
	}
	return 0, false
}

// byteUnit returns the binary unit that shows v readably and its size.
func byteUnit(v float64) (string, float64) {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB"}
	i, size := 0, 1.0
	for i < len(units)-1 && v >= size*1024 {
		i++
		size *= 1024
	}
	return units[i], size
}

// ResourcePlots draws every sampled series of the timeline, one figure
// per component and unit: CPU in cores, memory in bytes (scaled to a
// readable binary unit), counts; each series' limit drawn as a dashed
// line when it is within the plot's reach (else named in the legend);
// the holds and the faults applied shaded as in [TimelinePlots].
func ResourcePlots(res *loadtest.Result) ([]*Figure, []string) {
	tl := res.Timeline
	if tl == nil || tl.Len() == 0 && len(tl.Resources) == 0 {
		return nil, []string{"resources over time: " + strings.TrimPrefix(noTimeline, "time series: ")}
	}
	if len(tl.Resources) == 0 {
		return nil, []string{"resources over time: no series was sampled"}
	}
	type group struct {
		component, unit string
		series          []result.ResourceSeries
	}
	var groups []*group
	for _, r := range tl.Resources {
		i := slices.IndexFunc(groups, func(g *group) bool { return g.component == r.Component && g.unit == r.Unit })
		if i < 0 {
			groups = append(groups, &group{component: r.Component, unit: r.Unit})
			i = len(groups) - 1
		}
		groups[i].series = append(groups[i].series, r)
	}
	var figs []*Figure
	for _, g := range groups {
		peak := 0.0
		for _, r := range g.series {
			for _, v := range r.V {
				peak = math.Max(peak, v)
			}
		}
		scale, unit := 1.0, g.unit
		quantity := g.unit
		switch g.unit {
		case "bytes":
			unit, scale = byteUnit(peak)
			quantity = "memory"
		case "cores":
			quantity = "CPU"
		case "count", "":
			var names []string
			for _, r := range g.series {
				names = append(names, r.Metric)
			}
			quantity, unit = strings.Join(names, ", "), ""
		}
		ylabel := quantity
		if unit != "" {
			ylabel += " (" + unit + ")"
		}
		title := g.component
		if len(g.series) > 0 && g.series[0].Harness {
			title += " (harness)"
		}
		title += ": " + quantity
		p := newPlot(title+" over the run", "time since the run's start (s)", ylabel)
		leg := newLegend()
		addPhases(p, &leg, tl)
		addFaults(p, &leg, res)
		for i, r := range g.series {
			xys := make(plotter.XYs, 0, len(r.V))
			for j := range r.V {
				if j < len(r.T) {
					xys = append(xys, plotter.XY{X: r.T[j], Y: r.V[j] / scale})
				}
			}
			addSeries(p, &leg, r.Metric, xys, colour(i), nil, len(xys) < 30)
			if r.Limit > 0 {
				lim := r.Limit / scale
				name := fmt.Sprintf("%s limit %s", r.Metric, formatValue(r.Limit, g.unit))
				if peak > 0 && r.Limit > 20*peak {
					leg.Add(name+" (off scale)", hline{Color: colour(i), Dash: dashed, Width: vg.Points(1)})
					continue
				}
				h := hline{Y: lim, Color: colour(i), Dash: dashed, Width: vg.Points(1.5)}
				p.Add(h)
				leg.Add(name, h)
			}
		}
		fromZero(p)
		p.Y.Max *= 1.05
		figs = append(figs, &Figure{Name: "resources-" + slug(g.component) + "-" + slug(quantity), Plot: p, Legend: leg})
	}
	return figs, nil
}

// formatValue prints v of unit readably: "8 MiB", "2 cores", "20000".
func formatValue(v float64, unit string) string {
	switch unit {
	case "bytes":
		u, s := byteUnit(v)
		return num(v/s) + " " + u
	case "count", "":
		return num(v)
	}
	return num(v) + " " + unit
}

// nines are the percentiles a delay curve is drawn through.
var nines = []float64{0, 10, 25, 50, 75, 90, 95, 98, 99, 99.5, 99.9, 99.95, 99.99, 100}

// ninesX places percentile p on an axis where each nine takes the same
// width: 90 → 1, 99 → 2, 99.9 → 3.
func ninesX(p float64) float64 {
	if p >= 100 {
		return 4.3
	}
	return -math.Log10(1 - p/100)
}

// DelayPlots draws, for every observed kind (fan-out delays, stream
// events: samples, not requests), its distribution in each step as a
// percentile curve from the step's HDR histogram: latency against
// percentile, the tail spread out.
func DelayPlots(res *loadtest.Result) ([]*Figure, []string) {
	var kinds []string
	for _, name := range res.Kinds() {
		for _, s := range res.Steps {
			if k := s.Kind(name); k != nil && k.Observed && !slices.Contains(kinds, name) {
				kinds = append(kinds, name)
			}
		}
	}
	if len(kinds) == 0 {
		return nil, nil
	}
	var figs []*Figure
	var notes []string
	for _, name := range kinds {
		p := newPlot(fmt.Sprintf("%s (observed): distribution per step", name), "percentile (%, the tail spread out)", "delay (ms, log scale)")
		leg := newLegend()
		drawn := 0
		steps := res.Steps
		if len(steps) > 8 {
			steps = steps[len(steps)-8:]
		}
		for i, s := range steps {
			k := s.Kind(name)
			if k == nil || k.Answered() == 0 {
				continue
			}
			var xys plotter.XYs
			for _, q := range nines {
				if v := k.Percentile(max(q, 0.0001)); v > 0 {
					xys = append(xys, plotter.XY{X: ninesX(q), Y: ms(v)})
				}
			}
			label := fmt.Sprintf("step %d (level %s)", s.Index+1, num(s.Step.Level))
			if addSeries(p, &leg, label, xys, colour(i), nil, true) {
				drawn++
			}
		}
		if drawn == 0 {
			notes = append(notes, fmt.Sprintf("%s distribution: no step kept its histogram", name))
			continue
		}
		ticks := plot.ConstantTicks{}
		for _, q := range []float64{0, 50, 90, 99, 99.9, 100} {
			label := num(q)
			if q == 100 {
				label = "max"
			}
			ticks = append(ticks, plot.Tick{Value: ninesX(q), Label: label})
		}
		p.X.Tick.Marker = ticks
		p.X.Min, p.X.Max = 0, ninesX(100)+0.1
		for _, b := range LatencyBounds(res, name) {
			h := hline{Y: ms(b.Bound), Color: grey, Dash: dotted, Width: vg.Points(2)}
			p.Add(h)
			leg.Add(fmt.Sprintf("SLO p%s < %v", num(b.Percentile), b.Bound), h)
		}
		setLogY(p, msLabel)
		figs = append(figs, &Figure{Name: "delays-" + slug(name), Plot: p, Legend: leg})
	}
	return figs, notes
}

// capacityLabel labels the capacity line: "capacity 730", or "capacity ≥
// 800" where nothing gave out.
func capacityLabel(res *loadtest.Result) string {
	if res.CapacityLowerBound {
		return "capacity ≥ " + num(res.Capacity)
	}
	return "capacity " + num(res.Capacity)
}
