package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// stepped writes a result of two steps of kind get (and an observed kind
// with more samples), the second failing its p95 check.
func stepped(t *testing.T, dir, name string) string {
	return writeResult(t, dir, name, "2026-11-30 10:00", 400, func(r *loadtest.Result) {
		r.Checks = []string{"p95 of get < 100ms", "failures of all requests < 1%"}
		for i, lvl := range []float64{400, 800} {
			s := &loadtest.StepResult{Index: i, Step: loadtest.Step{Level: lvl, Hold: time.Second},
				Start: r.Start.Add(time.Duration(i) * time.Second), End: r.Start.Add(time.Duration(i+1) * time.Second),
				Offered: lvl, Achieved: lvl, Throughput: lvl * 0.99, Verdict: result.Pass,
				Kinds: []*result.KindResult{
					{Kind: "get", Outcomes: map[loadtest.Outcome]int64{loadtest.OK: int64(lvl * 0.99), loadtest.AppError: int64(lvl / 100)},
						Latency: result.Latencies{P50: 20 * time.Millisecond, P95: time.Duration(i+1) * 80 * time.Millisecond, P99: 300 * time.Millisecond, Max: time.Second}},
					{Kind: "fanout", Observed: true, Outcomes: map[loadtest.Outcome]int64{loadtest.OK: 10000},
						Latency: result.Latencies{P50: time.Millisecond, P95: 2 * time.Millisecond, P99: 3 * time.Millisecond}},
				}}
			if i == 1 {
				s.Verdict = result.Fail
				s.Violations = []string{"p95 of get < 100ms: measured 160ms"}
			}
			r.Steps = append(r.Steps, s)
		}
	})
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	a := stepped(t, filepath.Join(dir, "TestLoad_Smoke"), "a.json")
	b := stepped(t, filepath.Join(dir, "TestLoad_Smoke"), "b.json")

	var stdout, stderr bytes.Buffer
	require.Equal(t, exitPass, run([]string{"report", a}, &stdout, &stderr), stderr.String())
	page, err := os.ReadFile(strings.TrimSuffix(a, ".json") + ".html")
	require.NoError(t, err)
	assert.Contains(t, string(page), "<svg")
	assert.Contains(t, string(page), "get latency by load level")

	other := filepath.Join(t.TempDir(), "x.html")
	require.Equal(t, exitPass, run([]string{"report", "-o", other, b}, &stdout, &stderr), stderr.String())
	assert.FileExists(t, other)
	assert.NoFileExists(t, strings.TrimSuffix(b, ".json")+".html")

	stdout.Reset()
	require.Equal(t, exitPass, run([]string{"report", dir}, &stdout, &stderr), stderr.String())
	assert.FileExists(t, strings.TrimSuffix(b, ".json")+".html")
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	require.NoError(t, err)
	assert.Contains(t, string(index), `href="TestLoad_Smoke/a.html"`)
	assert.Contains(t, string(index), `href="TestLoad_Smoke/b.html"`)
	assert.Contains(t, stdout.String(), "(2 results)")

	assert.Equal(t, exitUsage, run([]string{"report", a, b}, &stdout, &stderr))
	assert.Equal(t, exitUsage, run([]string{"report", filepath.Join(dir, "missing.json")}, &stdout, &stderr))
}

func TestRenderJSONRoundTrips(t *testing.T) {
	dir := t.TempDir()
	a := stepped(t, dir, "a.json")
	var stdout bytes.Buffer
	require.NoError(t, render([]string{"-format", "json", a}, &stdout))
	var got report.Summary
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&got))
	res, err := result.ReadResult(a)
	require.NoError(t, err)
	assert.Equal(t, report.Summarize(res), got)

	assert.Equal(t, "TestLoad_Smoke", got.Scenario)
	assert.Equal(t, result.Fail, got.Verdict)
	assert.Equal(t, 400.0, got.Capacity)
	assert.Equal(t, 800.0, got.FirstFailure)
	assert.Equal(t, "get", got.PrimaryKind, "the observed kind is not the primary one")
	require.Len(t, got.Steps, 2)
	assert.Equal(t, 160.0, got.Steps[1].Latency.P95Ms)
	assert.Equal(t, []string{"p95 of get < 100ms: measured 160ms"}, got.Steps[1].Violations)
	assert.Equal(t, 0.01, got.Steps[0].ErrorRate)

	// Several results: an array.
	stdout.Reset()
	require.NoError(t, render([]string{"-format", "json", a, a}, &stdout))
	var many []report.Summary
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &many))
	assert.Len(t, many, 2)

	// A directory: every result under it, other JSON left out.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.json"), []byte(`{"name":"x"}`), 0o644))
	stepped(t, filepath.Join(dir, "sub"), "b.json")
	stdout.Reset()
	require.NoError(t, render([]string{"-format", "json", dir}, &stdout))
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &many))
	assert.Len(t, many, 2)

	assert.Error(t, render([]string{"-format", "yaml", a}, &stdout))
}

func TestRenderJUnit(t *testing.T) {
	dir := t.TempDir()
	a := stepped(t, dir, "a.json")
	var stdout bytes.Buffer
	require.NoError(t, render([]string{"-format", "junit", a}, &stdout))
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(stdout.Bytes(), &suites), stdout.String())
	assert.Equal(t, 2, suites.Tests)
	assert.Equal(t, 1, suites.Failures)
	require.Len(t, suites.Suites, 1)
	s := suites.Suites[0]
	assert.Equal(t, "TestLoad_Smoke", s.Name)
	require.Len(t, s.Cases, 2)
	assert.Equal(t, "step 1 (level 400 users)", s.Cases[0].Name)
	assert.Nil(t, s.Cases[0].Failure)
	require.NotNil(t, s.Cases[1].Failure)
	assert.Equal(t, "p95 of get < 100ms: measured 160ms", s.Cases[1].Failure.Message)
}

func TestPlotCommand(t *testing.T) {
	dir := t.TempDir()
	a := stepped(t, dir, "a.json")
	var stdout bytes.Buffer
	require.NoError(t, plot([]string{a}, &stdout))
	assert.Contains(t, stdout.String(), "get latency by load level")
	assert.Contains(t, stdout.String(), "SLO p95 &lt; 100ms")

	stdout.Reset()
	require.NoError(t, plot([]string{"-what", "throughput", "-format", "png", a}, &stdout))
	assert.Equal(t, "\x89PNG", stdout.String()[:4])

	out := filepath.Join(dir, "p.svg")
	stdout.Reset()
	require.NoError(t, plot([]string{"-what", "all", "-o", out, a}, &stdout))
	assert.FileExists(t, filepath.Join(dir, "p-latency.svg"))
	assert.FileExists(t, filepath.Join(dir, "p-throughput.svg"))

	assert.ErrorContains(t, plot([]string{"-what", "all", a}, &stdout), "give -o")
	assert.ErrorContains(t, plot([]string{"-what", "timeline", a}, &stdout), "no timeline")
	assert.ErrorContains(t, plot([]string{"-what", "bogus", a}, &stdout), "no figure")
	assert.Error(t, plot([]string{"-format", "gif", a}, &stdout))
}

// render refuses a JSON file that is no result — a baseline, another
// tool's JSON — instead of an empty "capacity 0" report.
func TestRenderRefusesOtherSchemas(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"baseline.json": `{"scenario":"TestLoad_X","runs":3,"capacity":{"min":80,"max":80}}`,
		"k6.json":       `{"metrics":{"http_req_duration":{"avg":12.5}}}`,
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		var stdout, stderr bytes.Buffer
		assert.NotEqual(t, exitPass, run([]string{"render", p}, &stdout, &stderr), name)
		assert.Contains(t, stderr.String(), "not a Headroom result", name)
		assert.NotContains(t, stdout.String(), "capacity", name)
	}
}
