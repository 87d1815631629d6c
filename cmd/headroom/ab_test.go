package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// -primary takes figure names, repeated or comma-separated, and refuses an
// empty one before a trial runs.
func TestABPrimaryFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string // one Set call each
		want []string
	}{
		// One name with a space in it.
		{"one", []string{"p95 dashboard"}, []string{"p95 dashboard"}},
		// Repeated.
		{"repeated", []string{"p95 dashboard", "cpu/ok relay"}, []string{"p95 dashboard", "cpu/ok relay"}},
		// Comma-separated, spaces about the commas trimmed.
		{"commas", []string{"p95 dashboard, cpu/ok relay,throughput"}, []string{"p95 dashboard", "cpu/ok relay", "throughput"}},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			var n figureNames
			for _, s := range tc.in {
				require.NoError(t, n.Set(s), s)
			}
			assert.Equal(t, tc.want, []string(n))
		})
	}
	for _, in := range []string{"", " ", "p95 dashboard,", ",throughput"} {
		var n figureNames
		assert.ErrorContains(t, n.Set(in), "name each figure as the report prints it", "%q", in)
	}
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"ab", "-run", "TestLoad_X", "-primary", "p95 dashboard,"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `invalid value "p95 dashboard," for flag -primary`)
	stderr.Reset()
	assert.Equal(t, bisectAbort, run([]string{"ab", "-bisect", "-run", "TestLoad_X", "-trials", "5", "-max-trials", "3"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-max-trials 3 is below -trials 5")
}

// fakeTrial returns trials of one request kind whose latency in arm B is
// slower times arm A's (4 ms), and counts the calls.
func fakeTrial(slower float64, calls *int) ab.TrialFunc {
	r := rand.New(rand.NewPCG(1, 2))
	return func(_ context.Context, arm ab.Arm, _ int) ([]*loadtest.Result, error) {
		*calls++
		lat := 4.0 * math.Exp(0.05*r.NormFloat64())
		if arm == ab.B {
			lat *= slower
		}
		h := hdrhistogram.New(1, 10_000_000, 2)
		for range 1000 {
			h.RecordValue(int64(lat * 1000 * math.Exp(0.3*r.NormFloat64())))
		}
		enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			return nil, err
		}
		start := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		return []*loadtest.Result{{Scenario: "TestLoad_X", Verdict: result.Pass,
			Steps: []*loadtest.StepResult{{Step: loadtest.Step{Level: 100, Hold: 10 * time.Second}, Start: start, End: start.Add(10 * time.Second),
				Verdict: result.Pass, Kinds: []*result.KindResult{{Kind: "get", Outcomes: map[loadtest.Outcome]int64{loadtest.OK: 1000}, Histogram: string(enc)}}}},
		}}, nil
	}
}

// headroom ab maps the comparison to its exit status, as git bisect run
// reads it under -bisect; a -primary name that is no figure stops the
// trials as soon as each arm has a result.
func TestABExitStatus(t *testing.T) {
	for _, tc := range []struct {
		name    string
		primary []string
		slower  float64
		bisect  bool
		want    int
		report  string // a substring of stdout, or of the error
	}{
		// The same build: unchanged, and what it could miss is said.
		{"same", nil, 1, false, exitPass, "could not rule out up to +"},
		// Latency doubled: regressed, bad to git bisect.
		{"regressed", nil, 2, false, exitFail, "worse in B: p50 get"},
		{"regressed-bisect", nil, 2, true, bisectBad, "settled after"},
		// Only p99 decides, and it regressed.
		{"primary", []string{"p99 get"}, 2, true, bisectBad, "worse in B: p99 get"},
		// A name that is no figure: a usage error naming the figures, an abort to git bisect.
		{"unknown", []string{"p95 dashboard"}, 2, false, exitUsage, `"p95 dashboard" is no figure of TestLoad_X; name figures as the report prints them: "throughput", "failures", "p50 get"`},
		{"unknown-bisect", []string{"p95 dashboard"}, 2, true, bisectAbort, "-primary: ab: unknown figure"},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			calls := 0
			var stdout bytes.Buffer
			out := t.TempDir()
			err := abRun{cfg: ab.Config{Trials: 5, Primary: tc.primary}, header: "# A/B: TestLoad_X\n\n", bisect: tc.bisect, base: "main", out: out}.
				run(context.Background(), fakeTrial(tc.slower, &calls), &stdout)
			code := exitPass
			if err != nil {
				var ee *exitError
				require.ErrorAs(t, err, &ee)
				code = ee.code
				if ee.err != nil {
					stdout.WriteString(ee.err.Error())
				}
			}
			assert.Equal(t, tc.want, code, stdout.String())
			assert.Contains(t, stdout.String(), tc.report)
			if tc.want == exitUsage || tc.want == bisectAbort {
				assert.Equal(t, 2, calls, "stopped after one trial of each arm")
				return
			}
			b, err := os.ReadFile(filepath.Join(out, "ab.json"))
			require.NoError(t, err)
			var reps []*ab.Report
			require.NoError(t, json.Unmarshal(b, &reps))
			require.Len(t, reps, 1)
			assert.NotEmpty(t, reps[0].Stop)
		})
	}
}

// An ab refused before its trials — a ref that is no commit — leaves no
// results directory behind.
func TestABRefusedLeavesNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ab")
	var stdout, stderr bytes.Buffer
	code := run([]string{"ab", "-run", "TestLoad_Smoke", "-base", "no-such-ref-0000", "-o", out}, &stdout, &stderr)
	assert.Equal(t, exitUsage, code, stderr.String())
	assert.Contains(t, stderr.String(), `"no-such-ref-0000" is not a commit`)
	assert.NoDirExists(t, out)
}

// The report names each arm's build of the target, from its results.
func TestABNamesEachArmsBuild(t *testing.T) {
	res := func(version, mod string) *loadtest.Result {
		return &loadtest.Result{Environment: result.Environment{System: result.System{Components: []result.Component{
			{Name: "postgres", Role: result.RoleDatabase, Version: "15.20"},
			{Name: "pb", Role: result.RoleTarget, Version: version, Build: &result.Build{Module: mod, Version: version, Go: "go1.26.8"}},
		}}}}
	}
	b := &armBuilds{}
	assert.Empty(t, b.markdown())
	b.note(ab.A, []*loadtest.Result{res("v0.28.2", "github.com/pocketbase/pocketbase")})
	b.note(ab.A, []*loadtest.Result{res("v0.28.2", "github.com/pocketbase/pocketbase")})
	b.note(ab.B, []*loadtest.Result{res("v0.36.8", "github.com/pocketbase/pocketbase")})
	assert.Equal(t, "Builds: A ran pb v0.28.2 (github.com/pocketbase/pocketbase v0.28.2, go1.26.8); B ran pb v0.36.8 (github.com/pocketbase/pocketbase v0.36.8, go1.26.8).\n\n", b.markdown())
}

// -base-mod names a release or a module directory; anything else is
// refused before a trial, leaving nothing.
func TestABRefusesABadModule(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ab")
	var stdout, stderr bytes.Buffer
	code := run([]string{"ab", "-run", "TestLoad_Smoke", "-base-mod", t.TempDir(), "-o", out}, &stdout, &stderr)
	assert.Equal(t, exitUsage, code, stderr.String())
	assert.Contains(t, stderr.String(), "neither a module at a version")
	assert.NoDirExists(t, out)
}

// An arm is one build: two ways of naming it, or a binary that is not an
// executable, are refused before anything is built or written.
func TestABRefusesAnArmGivenTwice(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-base", "HEAD~1", "-base-bin", exe}, "arm A is given by -base and -base-bin: give one"},
		{[]string{"-head-mod", "example.com/x@v1.0.0", "-head-image", "x:1"}, "arm B is given by -head-mod and -head-image: give one"},
		{[]string{"-base-bin", "/etc/passwd"}, `arm A: -base-bin "/etc/passwd" is not an executable file`},
	} {
		out := filepath.Join(t.TempDir(), "ab")
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"ab", "-run", "TestLoad_Smoke", "-o", out}, tc.args...), &stdout, &stderr)
		assert.Equal(t, exitUsage, code, stderr.String())
		assert.Contains(t, stderr.String(), tc.want)
		assert.NoDirExists(t, out)
	}
}

// A git ref's build is called by the ref and its commit; a commit by
// itself; an image arm's report line names its digest.
func TestABNamesRefsAndImages(t *testing.T) {
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	head := strings.TrimSpace(string(out))
	mod, err := moduleDir()
	require.NoError(t, err)
	assert.Equal(t, "HEAD@"+head[:12], refVersion(mod, "HEAD"))
	assert.Equal(t, head[:12], refVersion(mod, head[:9]))
	assert.Regexp(t, `^working tree@`+head[:12]+`(\+dirty)?$`, refVersion(mod, "."))
	assert.Empty(t, refVersion(t.TempDir(), "HEAD"), "no repository: the build names itself")

	b := &armBuilds{}
	b.note(ab.A, []*loadtest.Result{{Environment: result.Environment{System: result.System{Components: []result.Component{
		{Name: "svc", Role: result.RoleTarget, Version: "v1", Image: "myorg/svc:v1", Digest: "sha256:0123456789abcdef0123"}}}}}})
	assert.Contains(t, b.markdown(), "A ran svc v1 (image myorg/svc:v1, sha256:0123456789ab)")
}
