package report

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// withFaults gives the fixture's step 2, whose hold is 15 s to 25 s into
// the run, two faults: PostgreSQL paused from 17 s to 20 s, recovered
// from; the relay killed at 21.5 s, never cleared and not recovered from
// by the hold's end.
func withFaults(res *loadtest.Result) *loadtest.Result {
	start := res.Timeline.Start
	healthy := result.Health{}.WithDefaults()
	res.Steps[1].Faults = []result.FaultResult{
		{Name: "postgres paused 3s", At: 2 * time.Second, For: 3 * time.Second,
			Injected: start.Add(17 * time.Second), Cleared: start.Add(20 * time.Second), Healthy: healthy,
			Detected: true, DetectedAfter: time.Second, RecoveredAfter: 850 * time.Millisecond,
			Answered: 80, Failed: 21, TimedOut: 21},
		{Name: "relay killed", At: 6500 * time.Millisecond,
			Injected: start.Add(21500 * time.Millisecond), Healthy: healthy,
			Detected: true, DetectedAfter: 500 * time.Millisecond, Unrecovered: true,
			Answered: 120, Failed: 40},
	}
	return res
}

// A run with faults has a Faults section: a row per fault with the
// Markdown report's cells, the one not recovered from marked failed, and
// the rule the windows were judged by; a run without has none.
func TestHTMLFaults(t *testing.T) {
	page, err := HTML(fixture(t), "")
	require.NoError(t, err)
	s := string(page)
	assert.NotContains(t, s, `id="faults"`)
	assert.NotContains(t, s, `href="#faults"`)
	assert.NotContains(t, s, "Failed meanwhile")

	res := withFaults(fixture(t))
	page, err = HTML(res, "")
	require.NoError(t, err)
	s = string(page)
	assert.Contains(t, s, `<a href="#faults">Faults</a>`)
	assert.Contains(t, s, `<h2 id="faults">Faults</h2>`)
	assert.Contains(t, s, "<tr><th>Step</th><th>Fault</th><th>At</th><th>For</th><th>Seen</th><th>Recovered</th><th>Failed meanwhile</th></tr>")
	assert.Contains(t, s, `<tr><td class="num">2</td><td>postgres paused 3s</td><td class="num">2s</td><td class="num">3s</td>`+
		`<td>after 1s</td><td>after 850ms</td><td>21 (21 timed out) of 80</td></tr>`, "the recovered fault, unmarked")
	assert.Contains(t, s, `<tr class="fail"><td class="num">2</td><td>relay killed</td><td class="num">6.5s</td><td class="num">—</td>`+
		`<td>after 500ms</td><td>not by the hold&#39;s end</td><td>40 of 120</td></tr>`, "the fault not recovered from, marked failed")
	assert.Contains(t, s, "tr.fail td{color:#b71c1c}", "a failed row is coloured as a failed check is")
	assert.Contains(t, s, "Recovered: from its clear (its application, for a fault not undone) to the start of "+
		"3 windows in a row with ≤1% failed and at least half of the offered answered. Failed meanwhile:")
	faults, checks := strings.Index(s, `id="faults"`), strings.Index(s, `id="checks"`)
	assert.Less(t, strings.Index(s, `id="kinds"`), faults)
	assert.Less(t, faults, checks, "after the figures per kind, before the checks")
	assert.Equal(t, 2, strings.Count(s[faults:checks], "<tr><td")+strings.Count(s[faults:checks], "<tr class="), "a row per fault")

	// A fault whose injection failed shows why, and is marked as its
	// step is: invalid.
	res.Steps[2].Faults = []result.FaultResult{{Name: "replica stopped", At: time.Second, Injected: res.Timeline.Start.Add(29 * time.Second),
		Error: "applying it: no such container", Healthy: result.Health{}.WithDefaults()}}
	page, err = HTML(res, "")
	require.NoError(t, err)
	assert.Contains(t, string(page), `<tr class="invalid"><td class="num">3</td><td>replica stopped</td><td class="num">1s</td><td class="num">—</td>`+
		`<td>applying it: no such container</td><td>—</td><td>0 of 0</td></tr>`)
	assert.Empty(t, externalRefs(string(page)))
}

// rect is a filled rectangle of an SVG, in points from its bottom left.
type rect struct{ x0, x1, y0, y1 float64 }

var rectPath = regexp.MustCompile(`<path d="M([0-9.e+-]+),([0-9.e+-]+)L([0-9.e+-]+),([0-9.e+-]+)L([0-9.e+-]+),([0-9.e+-]+)L([0-9.e+-]+),([0-9.e+-]+)Z" style="fill:`)

// fullHeight returns the filled rectangles of svg across the whole height
// of the data area [ymin, ymax]: the shaded bands.
func fullHeight(svg string, ymin, ymax float64) []rect {
	var out []rect
	for _, m := range rectPath.FindAllStringSubmatch(svg, -1) {
		var v [8]float64
		for i := range v {
			v[i], _ = strconv.ParseFloat(m[i+1], 64)
		}
		r := rect{x0: v[0], x1: v[2], y0: v[1], y1: v[5]}
		if math.Abs(r.y0-ymin) < 0.1 && math.Abs(r.y1-ymax) < 0.1 {
			out = append(out, r)
		}
	}
	return out
}

// dataX returns where f draws x, in points from the left of its canvas,
// and the bottom and top of its data area.
func dataX(f *Figure, x float64) (at, ymin, ymax float64) {
	dc := draw.New(vgsvg.New(defaultW, defaultH))
	plotC, _, _ := f.areas(dc)
	data := f.Plot.DataCanvas(plotC)
	tx, _ := f.Plot.Transforms(&data)
	return tx(x).Points(), data.Min.Y.Points(), data.Max.Y.Points()
}

// timePlots returns every figure over the run's time.
func timePlots(t *testing.T, res *loadtest.Result) []*Figure {
	figs, notes := TimelinePlots(res, "")
	require.Len(t, figs, 4, notes)
	rs, notes := ResourcePlots(res)
	require.NotEmpty(t, rs, notes)
	return append(figs, rs...)
}

// Every plot over time shades each applied fault from its injection to
// its clear (to its hold's end when never cleared), named; a fault not
// applied, and a run without faults, shade nothing more than the holds.
func TestPlotsShadeFaults(t *testing.T) {
	holds := 3
	for _, f := range timePlots(t, fixture(t)) {
		b, err := f.SVG()
		require.NoError(t, err, f.Name)
		_, ymin, ymax := dataX(f, 0)
		assert.Len(t, fullHeight(string(b), ymin, ymax), holds, "%s: the holds alone", f.Name)
		assert.NotContains(t, texts(b), "fault applied", f.Name)
	}

	res := withFaults(fixture(t))
	res.Steps[2].Faults = []result.FaultResult{{Name: "replica stopped", At: time.Second, Injected: res.Timeline.Start.Add(29 * time.Second),
		Error: "applying it: no such container"}}
	spans := []struct {
		name     string
		from, to float64
	}{
		{"postgres paused 3s", 17, 20}, // injected to cleared
		{"relay killed", 21.5, 25},     // injected to its hold's end
	}
	for _, f := range timePlots(t, res) {
		b, err := f.SVG()
		require.NoError(t, err, f.Name)
		ts := texts(b)
		assert.Contains(t, ts, "fault applied", f.Name)
		assert.NotContains(t, ts, "replica stopped", "%s: a fault not applied is not shaded", f.Name)
		_, ymin, ymax := dataX(f, 0)
		bands := fullHeight(string(b), ymin, ymax)
		assert.Len(t, bands, holds+len(spans), "%s: the holds and a band per applied fault", f.Name)
		for _, sp := range spans {
			x0, _, _ := dataX(f, sp.from)
			x1, _, _ := dataX(f, sp.to)
			found := false
			for _, r := range bands {
				found = found || math.Abs(r.x0-x0) < 0.1 && math.Abs(r.x1-x1) < 0.1
			}
			assert.True(t, found, "%s: no band for %s from %g s (x=%.2f pt) to %g s (x=%.2f pt) among %v", f.Name, sp.name, sp.from, x0, sp.to, x1, bands)
			assert.Contains(t, ts, sp.name, "%s: the band is named", f.Name)
		}
	}
}
