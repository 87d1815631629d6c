package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// TestRunRenderCompareHistoryPlot: the run is a pipeline test, not a
// measurement: its ladder is low (24 and 48/s, held 5 s for the p95's 100
// samples), so that a pause of the shared machine delays fewer requests
// than the schedule-lag check counts (at 240/s, a 70 ms stall of a cold
// CI run made step 2 invalid).
func TestRunRenderCompareHistoryPlot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "a.json")
	var stdout bytes.Buffer
	require.NoError(t, runCmd([]string{"-url", srv.URL, "-rates", "24,48", "-ramp", "0s", "-hold", "5s", "-o", out}, &stdout))
	assert.Contains(t, stdout.String(), "**pass** — capacity **≥ 48 arrivals/s (the ladder's top; nothing near a limit)**")
	res, err := result.ReadResult(out)
	require.NoError(t, err)
	assert.Len(t, res.Steps, 2)
	assert.FileExists(t, filepath.Join(dir, "a.md"))
	assert.FileExists(t, filepath.Join(dir, "a.html"))

	stdout.Reset()
	require.NoError(t, render([]string{out}, &stdout))
	assert.Contains(t, stdout.String(), "| Arrivals/s | Requests/s |")

	stdout.Reset()
	require.NoError(t, compare([]string{out, out}, &stdout))
	assert.Contains(t, stdout.String(), "No regression against "+out)

	// A copy whose target died in step 2, taken for the harness's fault
	// (step invalid, 40% failed, capacity 48 → 24): once "no
	// regression", exit 0; now inconclusive, exit 3.
	collapsed := *res
	collapsed.Steps = []*loadtest.StepResult{res.Steps[0], func() *loadtest.StepResult {
		s := *res.Steps[1]
		k := *s.Kinds[0]
		k.Outcomes = map[result.Outcome]int64{result.OK: 150, result.TransportError: 100}
		s.Kinds, s.Verdict, s.Self.Reasons = []*result.KindResult{&k}, result.Invalid, []string{"harness fault: the proxy exited"}
		return &s
	}()}
	collapsed.Capacity, collapsed.Verdict = 24, result.Invalid
	dead := filepath.Join(dir, "dead.json")
	require.NoError(t, collapsed.WriteFile(dead))
	stdout.Reset()
	var stderr bytes.Buffer
	assert.Equal(t, exitInvalid, run([]string{"compare", out, dead}, &stdout, &stderr))
	assert.NotContains(t, stdout.String(), "No regression")
	assert.Contains(t, stdout.String(), "inconclusive: step 2 (level 48) is invalid: harness fault: the proxy exited")
	assert.Contains(t, stderr.String(), "rerun")

	// A copy whose capacity halved is a regression: exit status 1.
	res.Capacity = 24
	worse := filepath.Join(dir, "b.json")
	require.NoError(t, res.WriteFile(worse))
	stdout.Reset()
	assert.Equal(t, exitFail, run([]string{"compare", out, worse}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "capacity dropped to 24, below the 48–48")

	stdout.Reset()
	require.NoError(t, history([]string{dir}, &stdout))
	assert.Equal(t, 4, strings.Count(stdout.String(), "\n"), stdout.String()) // a header, a, b and dead

	gold := filepath.Join(dir, "baselines", "a.json")
	stdout.Reset()
	require.NoError(t, baseline([]string{"-o", gold, out, out}, &stdout))
	b, err := result.ReadBaseline(gold)
	require.NoError(t, err)
	assert.Equal(t, result.Range{Min: 48, Max: 48}, b.Capacity)
	assert.Equal(t, 2, b.Runs)
	assert.Len(t, b.Steps, 2)
	// A baseline file compares as BASE too.
	assert.Equal(t, exitFail, run([]string{"compare", gold, worse}, &stdout, &stderr))

	svg := filepath.Join(dir, "a.svg")
	require.NoError(t, plot([]string{"-o", svg, out}, &stdout))
	img, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(img), "<svg")
	assert.Contains(t, string(img), "latency (ms, log scale)")
	assert.Contains(t, string(img), "get latency by load level")
}

func TestRunRefusesRemoteTargets(t *testing.T) {
	for _, u := range []string{"http://10.1.2.3/", "https://8.8.8.8/x"} {
		err := runCmd([]string{"-url", u}, &bytes.Buffer{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not loopback")
	}
	assert.ErrorContains(t, runCmd([]string{"-url", "ftp://x"}, &bytes.Buffer{}), "not an absolute http(s) URL")
	assert.ErrorContains(t, runCmd(nil, &bytes.Buffer{}), "-url is required")
	assert.ErrorContains(t, runCmd([]string{"-url", "http://127.0.0.1:1/", "-rates", "x"}, &bytes.Buffer{}), "-rates")
}

// compare refuses results that do not compare, with exit status 2.
func TestCompareRefusesMismatchedResults(t *testing.T) {
	dir := t.TempDir()
	res := &loadtest.Result{Schema: result.SchemaVersion, Scenario: "TestA", Plan: result.PlanInfo{Type: "ladder", Steps: []loadtest.Step{{Level: 10, Hold: time.Second}}},
		Environment: result.Environment{CPUModel: "x", Cores: 2}, Capacity: 10, Verdict: result.Pass}
	write := func(name string, change func(r *loadtest.Result)) string {
		r := *res
		change(&r)
		p := filepath.Join(dir, name)
		require.NoError(t, r.WriteFile(p))
		return p
	}
	base := write("base.json", func(*loadtest.Result) {})
	for _, tc := range []struct {
		name   string
		change func(r *loadtest.Result)
		want   string
	}{
		{"scenario", func(r *loadtest.Result) { r.Scenario = "TestB" }, `results of different scenarios do not compare`},
		{"plan", func(r *loadtest.Result) { r.Plan.Steps = []loadtest.Step{{Level: 20, Hold: time.Second}} }, "ran different plans (ladder 10 vs ladder 20)"},
		{"class", func(r *loadtest.Result) { r.Environment.Cores = 64 }, `different environment classes (cores: "2" ≠ "64")`},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			assert.Equal(t, exitUsage, run([]string{"compare", base, write(tc.name+".json", tc.change)}, &stdout, &stderr))
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

// run exits 0 on a pass, 1 when the SLO fails (nothing succeeded), and 2
// at once when nothing answers; help prints the exit statuses.
func TestRunExitStatus(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer ok.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer failing.Close()
	// A port where nothing listens: a closed listener's.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := "http://" + l.Addr().String() + "/"
	l.Close()

	args := []string{"-ramp", "0s", "-hold", "1s", "-rates", "150", "-url"}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitPass, run(append([]string{"run"}, append(args, ok.URL)...), &stdout, &stderr), stderr.String())

	// The host is not judged here: a breach on a shared runner whose
	// hypervisor takes its cores would be invalid (exit 3), rightly.
	stderr.Reset()
	assert.Equal(t, exitFail, run(append([]string{"run", "-host-check=false"}, append(args, failing.URL)...), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no successful get during the hold")

	stderr.Reset()
	start := time.Now()
	assert.Equal(t, exitUsage, run(append([]string{"run"}, append(args, dead)...), &stdout, &stderr))
	assert.Contains(t, stderr.String(), "nothing answers at "+dead)
	assert.Contains(t, stderr.String(), "start the service or fix -url")
	assert.Less(t, time.Since(start), 5*time.Second, "before any load")

	// Success means an answer: a redirect to another host is not one
	// unless expected, nor an empty 200 before a close when a body is.
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.com/", http.StatusFound)
	}))
	defer redirect.Close()
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Connection", "close") }))
	defer empty.Close()
	for _, tc := range []struct {
		flags []string
		url   string
		want  int
	}{
		{nil, redirect.URL, exitFail},
		{[]string{"-expect-status", "302"}, redirect.URL, exitPass},
		{nil, empty.URL, exitPass},
		{[]string{"-expect-bytes", "1"}, empty.URL, exitFail},
		{[]string{"-expect-status", "200,x"}, ok.URL, exitUsage},
	} {
		stderr.Reset()
		code := run(append(append([]string{"run", "-host-check=false"}, tc.flags...), append(args, tc.url)...), &stdout, &stderr)
		assert.Equal(t, tc.want, code, "%v %s: %s", tc.flags, tc.url, stderr.String())
	}

	for _, h := range []string{"help", "-h", "--help"} {
		stdout.Reset()
		assert.Equal(t, exitPass, run([]string{h}, &stdout, &stderr))
		assert.Contains(t, stdout.String(), "3  invalid, incomplete or inconclusive")
	}
	assert.Equal(t, exitUsage, run([]string{"frobnicate"}, &stdout, &stderr))
}

// -matters takes a percentage or a fraction below 1; anything else is
// refused before a trial runs.
func TestABMattersFlag(t *testing.T) {
	for in, want := range map[string]float64{"20%": 0.2, "0.2": 0.2, "0": 0, " 5% ": 0.05} {
		var f fraction
		require.NoError(t, f.Set(in), in)
		assert.InDelta(t, want, float64(f), 1e-12, in)
	}
	for _, in := range []string{"100%", "1", "-5%", "x", "NaN", ""} {
		var f fraction
		assert.Error(t, f.Set(in), in)
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"ab", "-run", "TestLoad_X", "-matters", "150%"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `invalid value "150%" for flag -matters: "150%": give at least 0% and below 100%`)
}
