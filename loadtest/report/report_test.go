package report

import (
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/history"
	"github.com/headroom-dev/headroom/loadtest/result"
)

func TestPrimaryKindIsARequestKind(t *testing.T) {
	res := fixture(t)
	// fanout has six times the samples of tools/call, but it is observed.
	require.Greater(t, res.Steps[0].Kind("fanout").Total(), res.Steps[0].Kind("tools/call").Total())
	assert.Equal(t, "tools/call", res.PrimaryKind())

	// Before any step, the timeline decides, still never an observed kind.
	res.Steps = nil
	assert.Equal(t, "tools/call", res.PrimaryKind())

	f, note := LatencyPlot(fixture(t), "")
	assert.Nil(t, f)
	assert.NotEmpty(t, note)
	figs, err := Plots(fixture(t), "latency", "")
	require.NoError(t, err)
	assert.Equal(t, "tools/call latency by load level", figs[0].Plot.Title.Text)
}

func TestLatencyBounds(t *testing.T) {
	res := fixture(t)
	assert.Equal(t, []Bound{
		{Percentile: 95, Bound: 250 * time.Millisecond, Check: "p95 of tools/call < 250ms"},
		{Percentile: 99, Bound: time.Second, Check: "p99 of tools/call < 1s"},
	}, LatencyBounds(res, "tools/call"))
	assert.Equal(t, 50*time.Millisecond, LatencyBounds(res, "fanout")[0].Bound)
	assert.Empty(t, LatencyBounds(res, "tools/list"))

	// What loadtest.Latency prints, parsed back for any kind name and bound.
	for _, c := range []loadtest.Check{
		loadtest.LatencyBelow("tools call", 99.9, 1500*time.Millisecond),
		loadtest.LatencyBelow("x < y", 50, 2*time.Minute+3*time.Second),
		loadtest.LatencyBelow("get", 95, 2900*time.Microsecond),
	} {
		l := c.(loadtest.Latency)
		got := LatencyBounds(&loadtest.Result{Checks: []string{c.String()}}, l.Kind)
		require.Len(t, got, 1, c.String())
		assert.Equal(t, l.Percentile, got[0].Percentile, c.String())
		assert.Equal(t, l.Bound, got[0].Bound, c.String())
	}
}

// dottedPaths returns the points of the SVG's dotted paths (as the SLO
// lines are drawn): "M1,2L3,4" → [[1 2] [3 4]].
func dottedPaths(svg string) [][][2]float64 {
	var out [][][2]float64
	for _, m := range regexp.MustCompile(`<path d="([^"]*)" style="[^"]*stroke-dasharray:1.5,2[^"]*"`).FindAllStringSubmatch(svg, -1) {
		var pts [][2]float64
		for _, p := range regexp.MustCompile(`[ML](-?[0-9.e+-]+),(-?[0-9.e+-]+)`).FindAllStringSubmatch(m[1], -1) {
			x, _ := strconv.ParseFloat(p[1], 64)
			y, _ := strconv.ParseFloat(p[2], 64)
			pts = append(pts, [2]float64{x, y})
		}
		out = append(out, pts)
	}
	return out
}

// dataY returns where f draws y, in points from the bottom of its canvas.
func dataY(f *Figure, y float64) (at, xmin, xmax float64) {
	dc := draw.New(vgsvg.New(defaultW, defaultH))
	plotC, _, _ := f.areas(dc)
	data := f.Plot.DataCanvas(plotC)
	_, ty := f.Plot.Transforms(&data)
	return ty(y).Points(), data.Min.X.Points(), data.Max.X.Points()
}

// hasHLine reports whether svg has a dotted horizontal line across the data area
// at height y (points), within a tenth of a point.
func hasHLine(svg string, y, xmin, xmax float64) bool {
	for _, p := range dottedPaths(svg) {
		if len(p) == 2 && math.Abs(p[0][1]-y) < 0.1 && math.Abs(p[1][1]-y) < 0.1 &&
			math.Abs(p[0][0]-xmin) < 0.1 && math.Abs(p[1][0]-xmax) < 0.1 {
			return true
		}
	}
	return false
}

func TestSLOLineAtTheParsedBound(t *testing.T) {
	res := fixture(t)
	f, note := LatencyPlot(res, res.PrimaryKind())
	require.NotNil(t, f, note)
	b, err := f.SVG()
	require.NoError(t, err)
	svg := string(b)
	assert.Contains(t, svg, "SLO p95 &lt; 250ms")
	assert.Contains(t, svg, "SLO p99 &lt; 1s")
	for _, ms := range []float64{250, 1000} {
		y, x0, x1 := dataY(f, ms)
		assert.True(t, hasHLine(svg, y, x0, x1), "no horizontal line at %g ms (y=%.2f pt)", ms, y)
	}
	// Not at a value no check names.
	y, x0, x1 := dataY(f, 300)
	assert.False(t, hasHLine(svg, y, x0, x1))
	// Capacity and first failure: vertical lines at their levels.
	assert.Contains(t, svg, "capacity 20")
	assert.Contains(t, svg, "first failure 40")

	// Without a latency check, no SLO line.
	res.Checks = []string{"failures of all requests < 1%"}
	f, _ = LatencyPlot(res, "tools/call")
	b, err = f.SVG()
	require.NoError(t, err)
	assert.NotContains(t, string(b), "SLO")
}

var svgText = regexp.MustCompile(`<text[^>]*>([^<]*)</text>`)

// texts returns the SVG's text elements, unescaped.
func texts(svg []byte) []string {
	var out []string
	for _, m := range svgText.FindAllSubmatch(svg, -1) {
		out = append(out, html.UnescapeString(string(m[1])))
	}
	return out
}

func TestFiguresHaveLabelledAxes(t *testing.T) {
	res := fixture(t)
	figs, err := Figures(res, "")
	require.NoError(t, err)
	names := map[string]*Figure{}
	for _, f := range figs {
		names[f.Name] = f
	}
	for _, want := range []string{"latency", "throughput", "timeline-rates", "timeline-latency", "timeline-errors",
		"resources-relay-cpu", "resources-relay-memory", "resources-generator-cpu", "delays-fanout"} {
		assert.Contains(t, names, want)
	}
	assert.NotContains(t, names, "knee", "a ladder has no knee plot")
	unit := regexp.MustCompile(`\(.+\)`)
	for _, f := range figs {
		svg, err := f.SVG()
		require.NoError(t, err, f.Name)
		ts := texts(svg)
		for _, label := range []string{f.Plot.Title.Text, f.Plot.X.Label.Text, f.Plot.Y.Label.Text} {
			assert.NotEmpty(t, label, f.Name)
			assert.Contains(t, ts, label, "%s: label %q not drawn", f.Name, label)
		}
		assert.Regexp(t, unit, f.Plot.X.Label.Text, "%s: x axis without its unit", f.Name)
		assert.Regexp(t, unit, f.Plot.Y.Label.Text, "%s: y axis without its unit", f.Name)
		// The legend fits beside the plot: its strip is within the
		// canvas and leaves most of the width to the data.
		dc := draw.New(vgsvg.New(defaultW, defaultH))
		if _, legC, ok := f.areas(dc); ok {
			w := f.Legend.Rectangle(dc).Size().X
			assert.LessOrEqual(t, float64(legC.Min.X+w), float64(defaultW)+0.5, "%s: legend cut off", f.Name)
			assert.Less(t, float64(w), float64(defaultW)/2.5, "%s: legend too wide", f.Name)
		}
		png, err := f.PNG()
		require.NoError(t, err, f.Name)
		assert.Equal(t, "\x89PNG", string(png[:4]))
	}
	assert.Equal(t, "level (users)", strings.TrimPrefix(names["latency"].Plot.X.Label.Text, "load "))
	assert.Equal(t, "latency (ms, log scale)", names["latency"].Plot.Y.Label.Text)
	assert.Equal(t, "memory (MiB)", names["resources-relay-memory"].Plot.Y.Label.Text)
	assert.Equal(t, "CPU (cores)", names["resources-relay-cpu"].Plot.Y.Label.Text)
	svg, _ := names["resources-relay-memory"].SVG()
	assert.Contains(t, texts(svg), "memory limit 256 MiB", "the limit is drawn and named")
	assert.Contains(t, texts(svg), "hold (measured)")
}

func TestKneePlot(t *testing.T) {
	res := fixture(t)
	res.Plan = result.PlanInfo{Type: "knee", Knee: &result.KneeParams{Start: 10, Factor: 2, Max: 80}}
	res.Steps[1].Verdict = result.Invalid
	res.Steps[1].Unjudged = []string{"p99 of tools/call < 1s: too little data to judge: 12 answered tools/call"}
	// Probes out of level order: 10, 40, 20.
	res.Steps[1], res.Steps[2] = res.Steps[2], res.Steps[1]
	f, note := KneePlot(res)
	require.NotNil(t, f, note)
	svg, err := f.SVG()
	require.NoError(t, err)
	ts := texts(svg)
	for _, want := range []string{"pass", "fail", "invalid", "capacity 20", "first failure 40", "probe (in the order run)", "load level (users)"} {
		assert.Contains(t, ts, want)
	}
	figs, err := Figures(res, "")
	require.NoError(t, err)
	assert.Equal(t, "knee", figs[2].Name)

	page, err := HTML(res, "")
	require.NoError(t, err)
	assert.Contains(t, string(page), "unjudged: too little data to judge: 12 answered tools/call")
}

// oldResult is the fixture as a schema-2 file of before timelines: no
// "timeline" key at all.
func oldResult(t *testing.T) *loadtest.Result {
	b, err := json.Marshal(fixture(t))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	delete(m, "timeline")
	b, err = json.Marshal(m)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "old.json")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	res, err := result.ReadResult(path)
	require.NoError(t, err)
	require.Nil(t, res.Timeline)
	return res
}

func TestOldResultWithoutTimelineRenders(t *testing.T) {
	res := oldResult(t)
	page, err := HTML(res, "")
	require.NoError(t, err)
	s := string(page)
	assert.Contains(t, s, "this result has no timeline")
	assert.Contains(t, s, `id="fig-latency"`)
	assert.Contains(t, s, `id="fig-throughput"`)
	assert.NotContains(t, s, `id="fig-timeline-rates"`)
	_, err = Plots(res, "timeline", "")
	assert.ErrorContains(t, err, "no timeline")
}

func TestIncompleteResultRenders(t *testing.T) {
	// What loadtest.Test writes before the first step: no step, no timeline.
	res := &loadtest.Result{Schema: 2, Scenario: "TestLoad_Stub", Model: "arrivals", Plan: result.PlanInfo{Type: "ladder"},
		Verdict: result.Incomplete, Partial: true, Start: time.Now(), End: time.Now(),
		Conclusion: "the run had not finished its first step when this was written"}
	page, err := HTML(res, filepath.Join(t.TempDir(), "stub.json"))
	require.NoError(t, err)
	s := string(page)
	assert.Contains(t, s, "incomplete")
	assert.Contains(t, s, "No step has been measured yet")
	assert.Contains(t, s, "partial")

	// Interrupted mid-step: the last step incomplete, the timeline cut.
	res = fixture(t)
	res.Partial, res.Verdict = true, result.Incomplete
	res.Steps[2].Verdict, res.Steps[2].Violations = result.Incomplete, nil
	res.Timeline.Phases = res.Timeline.Phases[:7]
	page, err = HTML(res, "")
	require.NoError(t, err)
	assert.Contains(t, string(page), "not judged (incomplete step)")
	assert.Contains(t, string(page), "data-verdict=\"incomplete\"")
}

var (
	tagRe  = regexp.MustCompile(`<[^>]*>`)
	attrRe = regexp.MustCompile(`(?i)\s(src|href|xlink:href|action|srcset|poster|data)\s*=\s*"([^"]*)"`)
)

// externalRefs returns every reference of page to something outside
// itself and its directory: a URL with a scheme or a host, in an attribute,
// a stylesheet or a script. Plain text (a target's URL in the command) is
// not a reference.
func externalRefs(page string) []string {
	var out []string
	for _, tag := range tagRe.FindAllString(page, -1) {
		if strings.Contains(tag, "http://") || strings.Contains(tag, "https://") {
			out = append(out, "tag with a URL: "+tag)
		}
		for _, m := range attrRe.FindAllStringSubmatch(tag, -1) {
			v := html.UnescapeString(m[2])
			if strings.HasPrefix(v, "//") || regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(v) {
				out = append(out, m[1]+"="+v)
			}
		}
	}
	lower := strings.ToLower(page)
	for _, bad := range []string{"@import", "url(", "<link", "<iframe", "<img", "<object", "<embed", "<base", "<script src", "fetch(", "xmlhttprequest", "@font-face"} {
		if strings.Contains(lower, bad) {
			out = append(out, bad)
		}
	}
	return out
}

func TestHTMLIsSelfContained(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "users=40.json")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "users=40.logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "users=40.logs", "relay.log"), []byte("log"), 0o644))
	res := fixture(t)
	res.Scenario = "headroom run http://127.0.0.1:8080/<x>"
	page, err := HTML(res, jsonPath)
	require.NoError(t, err)
	s := string(page)
	assert.Empty(t, externalRefs(s))
	assert.Contains(t, s, "http://127.0.0.1:8080/&lt;x&gt;", "the target URL stays, as text")

	// The self-check catches what it should.
	assert.NotEmpty(t, externalRefs(`<img src="https://example.com/x.png">`))
	assert.NotEmpty(t, externalRefs(`<a href="//cdn.example/x">`))
	assert.NotEmpty(t, externalRefs(`<style>@import "x.css";</style>`))
	assert.Empty(t, externalRefs(`<p>see http://127.0.0.1/</p><a href="a%20b/c.log">`))

	// What the page holds.
	for _, want := range []string{
		`class="verdict fail"`, html.EscapeString(res.Provenance.Command), "capacity 20 users; first failure at 40",
		"p95 of tools/call &lt; 250ms", "violated: measured 612.3ms", "held: measured", "failures of all requests &lt; 1%",
		"relay cpu: mean 0.95 of 1 cores (95%)", "relay memory per user", "regression: capacity 30 → 20 (-33%)",
		"AMD EPYC", `href="users=40.logs/relay.log"`, `href="users=40.profiles/step3%20relay.cpu.pprof"`,
		"tool error: &lt;upstream&gt; said &#34;no&#34; &amp; gave up", "fanout <i>(observed)</i>", "LOADTEST_TARGET",
	} {
		assert.Contains(t, s, want)
	}
	assert.Equal(t, 10, strings.Count(s, "<svg"), "one inline SVG per figure")
	assert.Less(t, strings.Index(s, "class=\"verdict"), strings.Index(s, "<svg"), "the verdict comes before the plots")

	// A ladder whose every step passed claims its top only as a bound.
	for _, st := range res.Steps {
		st.Verdict, st.Saturated = result.Pass, nil
	}
	res.Decide()
	page, err = HTML(res, jsonPath)
	require.NoError(t, err)
	assert.Contains(t, string(page), "capacity ≥ "+format.Level(res.Capacity)+" users (the ladder&#39;s top; nothing near a limit)")
}

func TestWriteHTML(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "r.json")
	res := fixture(t)
	start := time.Now()
	require.NoError(t, WriteHTML(res, jsonPath))
	took := time.Since(start)
	t.Logf("HTML of a 3-step result with a 39 s timeline in %v", took)
	assert.Less(t, took, 5*time.Second, "too slow to rewrite after every step")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "no temporary file left")
	assert.Equal(t, "r.html", ents[0].Name())
}

func TestIndex(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "results")
	write := func(rel string, change func(*loadtest.Result), html bool) *loadtest.Result {
		res := fixture(t)
		if change != nil {
			change(res)
		}
		p := filepath.Join(dir, rel)
		require.NoError(t, res.WriteFile(p))
		if html {
			require.NoError(t, WriteHTML(res, p))
		}
		return res
	}
	a := write("TestLoad_Fixture/users=40.json", nil, true)
	write("TestLoad_Fixture/users=40.short.json", func(r *loadtest.Result) {
		r.Short, r.Start = true, r.Start.Add(time.Hour)
		r.Provenance.Commit = "fedcba9876543210"
	}, false)
	write("TestLoad_Other/backend=local.json", func(r *loadtest.Result) {
		r.Scenario, r.Verdict, r.Capacity, r.FirstFailure = "TestLoad_Other/backend=local", result.Pass, 40, 0
	}, true)
	// Not results: a component's log directory, other JSON.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "TestLoad_Fixture", "users=40.logs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "TestLoad_Fixture", "users=40.logs", "x.json"), []byte(`{"scenario":"x"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "study.json"), []byte(`{"name":"gc"}`), 0o644))
	// The capacity history beside the results directory.
	var rows []history.Row
	for i, c := range []string{"1111111aaaa", "2222222bbbb"} {
		r := history.RowFromResult(a, "")
		r.Commit, r.Date, r.Capacity = c, r.Date.Add(time.Duration(i)*24*time.Hour), float64(20+10*i)
		r.Verdict, r.Note = result.Pass, "change "+strconv.Itoa(i)
		rows = append(rows, r)
	}
	require.NoError(t, history.Append(filepath.Join(root, "history.jsonl"), rows...))
	// An A/B comparison.
	abDir := filepath.Join(dir, "ab", "20261201-100000")
	require.NoError(t, os.MkdirAll(abDir, 0o755))
	b, err := json.Marshal([]*ab.Report{{Scenario: "TestLoad_Fixture/users=40", Trials: [2]int{5, 5}, Verdict: ab.Regressed, Reason: "throughput fell 12%"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(abDir, "ab.json"), b, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(abDir, "ab.md"), []byte("# A/B"), 0o644))

	path, err := Index(dir)
	require.NoError(t, err)
	page, err := os.ReadFile(path)
	require.NoError(t, err)
	s := string(page)
	assert.Contains(t, s, `data-results="3"`)
	for _, want := range []string{
		"<h2>TestLoad_Fixture/users=40</h2>", "<h2>TestLoad_Other/backend=local</h2>",
		`href="TestLoad_Fixture/users=40.html"`, `href="TestLoad_Other/backend=local.html"`,
		`href="TestLoad_Fixture/users=40.short.json"`, "not rendered yet",
		"Capacity history", "1111111aaaa", "2222222bbbb", "change 1", "&#43;50.0%",
		"A/B comparisons", "regressed", "throughput fell 12%", `href="ab/20261201-100000/ab.md"`,
	} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "users=40.logs")
	assert.Empty(t, externalRefs(s))
	// Every link resolves to a file beside the index.
	links := regexp.MustCompile(`href="([^"#][^"]*)"`).FindAllStringSubmatch(s, -1)
	assert.Len(t, links, 3*2+1)
	for _, m := range links {
		p := strings.ReplaceAll(html.UnescapeString(m[1]), "%3D", "=")
		_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p)))
		assert.NoError(t, err, "link %s", m[1])
	}
}

// TestIndexShowsTheHistorysChanges: a history whose cpu/ok relay steps
// ×1.5 after its sixth night gets, on the index, the finding and a plot of
// the figure's nights; without the step, neither.
func TestIndexShowsTheHistorysChanges(t *testing.T) {
	for _, step := range []float64{1.5, 1} {
		root := t.TempDir()
		dir := filepath.Join(root, "results")
		res := fixture(t)
		require.NoError(t, res.WriteFile(filepath.Join(dir, "TestLoad_Fixture", "users=40.json")))
		var rows []history.Row
		for i := range 12 {
			r := history.RowFromResult(res, "")
			r.Commit, r.Date = fmt.Sprintf("%c%039d", 'a'+i, 0), r.Date.AddDate(0, 0, i)
			cpu := 200 * (1 + 0.02*float64(i%3)) // a little noise
			if i >= 6 {
				cpu *= step
			}
			r.Figures = []history.Figure{{Name: "cpu/ok relay", Unit: "µs", Value: cpu}}
			rows = append(rows, r)
		}
		require.NoError(t, history.Append(filepath.Join(root, "history.jsonl"), rows...))
		path, err := Index(dir)
		require.NoError(t, err)
		page, err := os.ReadFile(path)
		require.NoError(t, err)
		s := string(page)
		if step == 1 {
			assert.NotContains(t, s, "Changes over the nights")
			continue
		}
		assert.Contains(t, s, "Changes over the nights")
		assert.Contains(t, s, "cpu/ok relay stepped ×1.5")
		assert.Contains(t, s, "between the nights of commits `f000000`")
		assert.Contains(t, s, "cpu/ok relay across nights")
	}
}

func TestLongLegendGrowsTheFigure(t *testing.T) {
	res := fixture(t)
	tl := res.Timeline
	for i := range 30 {
		k := *tl.Kinds[1]
		k.Kind = "kind-" + strconv.Itoa(i)
		tl.Kinds = append(tl.Kinds, &k)
	}
	figs, _ := TimelinePlots(res, "tools/call")
	require.Len(t, figs, 4, "rates, latency, observed delays, errors")
	f := figs[1]
	require.Equal(t, "timeline-latency", f.Name)
	svg, err := f.SVG()
	require.NoError(t, err)
	m := regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`).FindSubmatch(svg)
	require.NotNil(t, m)
	h, _ := strconv.ParseFloat(string(m[2]), 64)
	need := f.Legend.Rectangle(draw.Canvas{}).Size().Y.Points()
	assert.Greater(t, h, need, "the legend's %d entries fit in the figure's height", 3+1+30)
	assert.Greater(t, h, defaultH.Points())
	assert.Contains(t, texts(svg), "p95 kind-29")
}

// TestObservedDelaysApart draws observed kinds (fan-out delays) in a
// figure of their own, not among the requests' latencies.
func TestObservedDelaysApart(t *testing.T) {
	figs, _ := TimelinePlots(fixture(t), "tools/call")
	byName := map[string]string{}
	for _, f := range figs {
		svg, err := f.SVG()
		require.NoError(t, err)
		byName[f.Name] = strings.Join(texts(svg), "\n")
	}
	require.Contains(t, byName, "timeline-latency")
	require.Contains(t, byName, "timeline-observed")
	assert.Contains(t, byName["timeline-latency"], "p99 tools/call")
	assert.NotContains(t, byName["timeline-latency"], "fanout")
	assert.Contains(t, byName["timeline-observed"], "p95 fanout")
	assert.NotContains(t, byName["timeline-observed"], "tools/call")
}

// A run that counted its statements shows them per step, with the busiest
// of the last step that counted them; one that did not has no section.
func TestHTMLQueries(t *testing.T) {
	res := fixture(t)
	page, err := HTML(res, filepath.Join(t.TempDir(), "r.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(page), `id="queries"`)

	for i, s := range res.Steps {
		secs := s.Seconds()
		require.Positive(t, secs)
		ok := int64(100 * float64(i+1) * secs)
		s.Queries = result.HoldQueries(nil, []result.Statement{
			{ID: 1, Query: "SELECT tool, count(*) FROM usage WHERE workspace_id = $1 AND tool = $3", Calls: 20 * ok, Rows: 20 * ok, TotalMS: 0.05 * float64(20*ok)},
			{ID: 2, Query: "SELECT DISTINCT tool FROM usage WHERE workspace_id = $1 AND started_at >= $2", Calls: ok, Rows: 20 * ok, TotalMS: 0.5 * float64(ok)},
		}, ok)
	}
	page, err = HTML(res, filepath.Join(t.TempDir(), "r.json"))
	require.NoError(t, err)
	s := string(page)
	assert.Contains(t, s, `<a href="#queries">Queries</a>`)
	assert.Contains(t, s, `<td class="num">21.00</td>`, "21 statements per successful request")
	assert.Contains(t, s, fmt.Sprintf("The busiest statements of step %d", len(res.Steps)))
	assert.Contains(t, s, "<code>SELECT tool, count(*) FROM usage WHERE workspace_id = $1 AND tool = $3</code>")
	assert.Less(t, strings.Index(s, "SELECT tool, count(*)"), strings.Index(s, "SELECT DISTINCT tool"), "by database time")
	assert.Empty(t, externalRefs(s))
}
