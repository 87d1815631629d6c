package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/usermod"
	"github.com/headroom-dev/headroom/loadtest"
	caphistory "github.com/headroom-dev/headroom/loadtest/history"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// The rehearsal's target: tiny, whose work per request and memory each
// commit sets (cmd/tiny/cost.go).
const (
	rehearsalMain = `// Command tiny hashes a buffer rounds times per request and holds a
// ballast of ballastKiB, every page touched.
package main

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
)

var ballast []byte

func main() {
	ballast = make([]byte, ballastKiB<<10)
	for i := range len(ballast) / 4096 {
		ballast[i*4096] = 1
	}
	buf := make([]byte, 1024)
	http.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {})
	http.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) {
		var sum [32]byte
		for range rounds {
			sum = sha256.Sum256(buf)
		}
		fmt.Fprintf(w, "%x %d\n", sum[:4], ballast[4096])
	})
	if err := http.ListenAndServe(os.Getenv("ADDR"), nil); err != nil {
		panic(err)
	}
}
`
	rehearsalCost = `package main

// Revision %d: the work per request and the ballast held.
const (
	rounds     = %d
	ballastKiB = %d
)
`
	rehearsalScenario = `package loadtest

import (
	"os"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

func TestMain(m *testing.M) { fixtures.Main(m) }

// TestLoad_Tiny drives tiny at 200 requests/s for HOLD.
func TestLoad_Tiny(t *testing.T) {
	hold, err := time.ParseDuration(os.Getenv("HOLD"))
	if err != nil {
		hold = 3 * time.Second
	}
	stack := fixtures.Start(t, fixtures.WithBackend(fixtures.BackendLocal),
		fixtures.WithTarget(fixtures.Service{Name: "tiny", Package: "./cmd/tiny", Env: map[string]string{"ADDR": "{{.Addr}}"}}),
		fixtures.WithDatabase(fixtures.NoDatabase), fixtures.WithoutUpstream(), fixtures.WithoutProxy())
	hc, err := httpc.New(httpc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	work, err := hc.Prepare("GET", stack.URL+"/work", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := loadtest.Test(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "work", Weight: 1, Do: hc.Func(work)}}},
		Plan:     loadtest.Levels(500*time.Millisecond, hold, 200),
		Checks:   []loadtest.Check{loadtest.FailuresBelow("work", 0.01)},
		Samplers: stack.Samplers(),
		System:   stack.System(),
	})
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}
`
)

// TestNightlyRehearsal is the nightly pipeline run here against a
// throwaway history (make nightly runs its full size): commits of a tiny
// service, one simulated night per commit but those that land the same
// day as the next — the commit that plants a ×1.5 cost per request lands
// with the one after it (the two after it at full size), so that the
// nights either side of the step are two (three) commits apart — and a
// ballast that grows 3% a night. Each night runs the scenario and headroom
// nightly over its result, the last one with -bisect. The history must
// show the step in cpu/ok tiny at the right night, the ballast as a drift
// in memory tiny (not as a step), and the bisection must name the planted
// commit, with the A/B table at it.
func TestNightlyRehearsal(t *testing.T) {
	if testing.Short() {
		t.Skip("one load run a night and a bisection: minutes")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	// A step needs nights enough either side to be told from noise: a
	// permutation test cannot reach p ≤ 0.005 unless fewer than 1 in 400
	// orders of the nights put every high one last, as with 6 and 5
	// nights (2 in 462); 7 and 6 (2 in 1,716) can. The planted commit
	// lands the same day as the with after it, so that git bisect has
	// with+1 commits to search: one A/B step here, two at full size.
	commits, planted, with, hold := 14, 8, 1, "2s"
	if os.Getenv("HEADROOM_NIGHTLY") == "full" {
		commits, planted, with, hold = 21, 12, 2, "5s"
	}
	nightless := func(rev int) bool { return rev >= planted && rev < planted+with } // landed with the next
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	tmp := t.TempDir()
	headroom := filepath.Join(tmp, "headroom")
	out, err := exec.Command("go", "build", "-o", headroom, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)

	mod := usermod.New(t, root, "example.com/tiny", map[string]string{
		".gitignore":            "/testdata/results/\n",
		"cmd/tiny/main.go":      rehearsalMain,
		"cmd/tiny/cost.go":      fmt.Sprintf(rehearsalCost, 0, 600, 64<<10),
		"loadtest/tiny_test.go": rehearsalScenario,
	})
	repo := mod.Dir
	git(t, repo, "init", "-q", "-b", "main")
	var shas []string
	// The ballast grows 3% at each commit that has a night, so that it
	// creeps 3% a night: grown at every commit, the commits without a
	// night would make a real step between two nights.
	grown := 0
	for i := 1; i <= commits; i++ {
		rounds := 600 // about 500 µs of a 900 µs request here
		if i >= planted {
			rounds = 1150 // the planted cost: about ×1.5 CPU per request
		}
		ballast := float64(64<<10) * pow(1.03, grown) // KiB
		if !nightless(i) {
			grown++
		}
		mod.Write("cmd/tiny/cost.go", fmt.Sprintf(rehearsalCost, i, rounds, int(ballast)))
		git(t, repo, "add", "-A")
		git(t, repo, "commit", "-q", "-m", fmt.Sprintf("revision %d", i))
		shas = append(shas, git(t, repo, "rev-parse", "HEAD"))
	}

	history := filepath.Join(tmp, "history", "history.jsonl")
	summary := filepath.Join(tmp, "summary.md")
	headroomIn := func(args ...string) (string, error) {
		cmd := exec.Command(headroom, args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "HOLD="+hold)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// The scenario's test never changes (each commit changes the target,
	// which fixtures build from the night's checkout): built once, its
	// binary runs every night as go test would, in its package's folder,
	// which saves linking it again each night.
	nightTest := filepath.Join(tmp, "tiny.test")
	build := exec.Command("go", "test", "-c", "-o", nightTest, "./loadtest")
	build.Dir = repo
	out, err = build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	start := time.Now()
	nights := 0
	for i, sha := range shas {
		if nightless(i + 1) {
			continue // no night of its own: it landed with the next one
		}
		git(t, repo, "checkout", "-q", sha)
		test := exec.Command(nightTest, "-test.count=1", "-test.run", "^TestLoad_Tiny$")
		test.Dir = filepath.Join(repo, "loadtest")
		test.Env = append(os.Environ(), "HOLD="+hold)
		b, err := test.CombinedOutput()
		require.NoError(t, err, "night of revision %d:\n%s", i+1, b)
		last := i == len(shas)-1
		args := []string{"nightly", "-file", history, "-results", "testdata/results", "-summary", summary}
		if last {
			git(t, repo, "checkout", "-q", "main")
			args = append(args, "-bisect", "-ab", "-pkg ./loadtest -tags= -trials 5 -timeout 2m")
		}
		night, err := headroomIn(args...)
		if !last {
			// Until the step has nights enough behind it, a night may or
			// may not report it (exit 1); what it must not do is fail.
			var ee *exec.ExitError
			require.True(t, err == nil || errors.As(err, &ee) && ee.ExitCode() == exitFail, "night of revision %d: %v\n%s", i+1, err, night)
		} else {
			t.Logf("the last night (revision %d), with the bisection:\n%s", i+1, night)
		}
		require.NoError(t, os.RemoveAll(filepath.Join(repo, "testdata", "results")))
		nights++
	}
	t.Logf("%d nights and the bisection took %v", nights, time.Since(start).Round(time.Second))

	rows, err := caphistory.Read(history)
	require.NoError(t, err)
	require.Len(t, rows, nights, "a row a night")
	for _, r := range rows {
		var figs []string
		for _, f := range r.Figures {
			if f.Name == "cpu/ok tiny" || f.Name == "memory tiny" || f.Name == "p95 work" {
				figs = append(figs, fmt.Sprintf("%s %.4g %s", f.Name, f.Value, f.Unit))
			}
		}
		t.Logf("night of %.7s (%s): %s", r.Commit, r.Subject, strings.Join(figs, ", "))
	}
	found, err := caphistory.Changes(rows, "", caphistory.ChangeOptions{})
	require.NoError(t, err)
	var step, drift *caphistory.Finding
	for i, f := range found {
		t.Logf("found: %s", f)
		switch {
		case f.Figure == "cpu/ok tiny" && f.Step:
			step = &found[i]
		case f.Figure == "memory tiny" && !f.Step:
			drift = &found[i]
		case f.Figure == "memory tiny" && f.Step:
			t.Errorf("the ballast's steady 3%% a commit came out as a step: %s", f)
		}
	}
	require.NotNil(t, step, "the ×1.5 cost planted at revision %d must show as a step in cpu/ok tiny", planted)
	assert.Equal(t, shas[planted-2], step.Before.Commit, "the last night before the step is revision %d's", planted-1)
	assert.Equal(t, shas[planted+with-1], step.After.Commit, "the first night after is revision %d's", planted+with)
	assert.True(t, step.Worse)
	assert.Greater(t, step.Ratio, 1.3, "about ×1.5, more when the machine is busy")
	require.NotNil(t, drift, "the ballast grows 3%% a night: memory tiny must drift")
	assert.True(t, drift.Worse)
	assert.InDelta(t, 0.03, drift.PerNight, 0.02)

	sum, err := os.ReadFile(summary)
	require.NoError(t, err)
	t.Logf("summary:\n%s", sum)
	culprits := regexp.MustCompile("(?m)^Culprit: `([0-9a-f]{40})`").FindAllStringSubmatch(string(sum), -1)
	require.Len(t, culprits, 1, "one bisection for every figure that stepped between the same two nights")
	culprit := culprits[0]
	assert.Equal(t, shas[planted-1], culprit[1], "revision %d planted the cost", planted)
	assert.NotContains(t, string(sum), "the only commit between", "git bisect searched %d commits", with+1)
	assert.Contains(t, string(sum), "cpu/ok tiny", "the A/B table at the culprit")
	assert.Contains(t, string(sum), fmt.Sprintf("The A/B at the culprit against its parent, `%.7s` (the good night's commit): the bisection's own step there.", shas[planted-2]),
		"the culprit's parent is the good night's commit: its A/B is the bisection's step, not run again")
	assert.Equal(t, 2, strings.Count(string(sum), "**Verdict: regressed.**"), "the two nights' commits' A/B and the culprit's")
	assert.Contains(t, string(sum), "regressed")
	assert.Contains(t, string(sum), fmt.Sprintf("The two nights' commits, `%.7s` against `%.7s`", shas[planted-2], shas[planted+with-1]),
		"the step confirmed by an A/B of the two nights' commits before the bisection")
	// A second night over the same history bisects nothing again.
	again, err := headroomIn("nightly", "-file", history, "-results", filepath.Join(tmp, "none"), "-bisect")
	assert.Contains(t, again, "Already bisected", "%v", err)
	assert.NotContains(t, strings.ToLower(git(t, repo, "status", "--porcelain")), "bisect")

	// A step the machine made — p95 work flat, then ×1.6 from revision
	// 7's night on, no commit of the code's behind it — is found, and the
	// A/B of the two nights' commits does not reproduce it: nothing is
	// bisected.
	machine := filepath.Join(tmp, "machine.jsonl")
	for i, r := range rows {
		for j := range r.Figures {
			if r.Figures[j].Name == "p95 work" {
				r.Figures[j].Value = 2 * (1 + 0.02*float64(i%3-1))
				if i >= 6 {
					r.Figures[j].Value *= 1.6
				}
			}
		}
		require.NoError(t, caphistory.Append(machine, r))
	}
	bc, err := headroomIn("bisect-change", "-file", machine, "-figure", "p95 work", "-ab", "-pkg ./loadtest -tags= -trials 2 -max-trials 2 -timeout 2m")
	require.NoError(t, err, bc)
	assert.Contains(t, bc, fmt.Sprintf("The two nights' commits, `%.7s` against `%.7s`", shas[5], shas[6]))
	assert.Contains(t, bc, "Nothing bisected")
	assert.NotContains(t, bc, "Culprit:")
	assert.NotContains(t, strings.ToLower(git(t, repo, "status", "--porcelain")), "bisect")
}

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

func pow(x float64, n int) float64 {
	p := 1.0
	for range n {
		p *= x
	}
	return p
}

// TestNightlyAddsFinishedRunsOnly: a night's directory holds a finished
// result, an interrupted one and an A/B trial. The finished one becomes a
// row; the interrupted one is named in the summary and left out (an older
// pass must not stand for it); the trial is no night; a second night over
// the same directory adds nothing. A history without changes exits 0.
func TestNightlyAddsFinishedRunsOnly(t *testing.T) {
	dir := t.TempDir()
	night := filepath.Join(dir, "night")
	writeResult(t, night, "a.json", "2026-12-01 02:17", 400, nil)
	writeResult(t, night, "b.json", "2026-12-01 02:40", 400, func(r *loadtest.Result) {
		r.Scenario, r.Partial, r.Verdict, r.Conclusion = "TestLoad_Other", true, result.Incomplete, "interrupted by SIGTERM after step 1"
	})
	writeResult(t, filepath.Join(night, "ab", "20261201"), "c.json", "2026-12-01 03:00", 400, nil)
	require.NoError(t, os.WriteFile(filepath.Join(night, "summary.json"), []byte(`[{"scenario":""}]`), 0o644))
	file, summary := filepath.Join(dir, "h", "history.jsonl"), filepath.Join(dir, "summary.md")

	var stdout, stderr bytes.Buffer
	require.Equal(t, exitPass, run([]string{"nightly", "-results", night, "-file", file, "-summary", summary}, &stdout, &stderr), stderr.String())
	rows, err := caphistory.Read(file)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, "TestLoad_Smoke", rows[0].Scenario)
	sum, err := os.ReadFile(summary)
	require.NoError(t, err)
	assert.Contains(t, string(sum), "1 result(s) added")
	assert.Contains(t, string(sum), "not added: "+filepath.Join(night, "b.json")+": incomplete result (interrupted by SIGTERM after step 1)")
	assert.Contains(t, string(sum), "No step or drift found")

	stdout.Reset()
	require.Equal(t, exitPass, run([]string{"nightly", "-results", night, "-file", file}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "0 result(s) added")
	rows, err = caphistory.Read(file)
	require.NoError(t, err)
	assert.Len(t, rows, 1)
}

// TestHistoryChangesExitsOneOnAWorseStep: twelve nights whose capacity
// falls a third after the sixth — exit 1 and the step named; -format json
// gives it as data; the same history without the fall exits 0.
func TestHistoryChangesExitsOneOnAWorseStep(t *testing.T) {
	for _, fall := range []bool{true, false} {
		dir := t.TempDir()
		var files []string
		for i := range 12 {
			capacity := 600.0 + float64(i%3)*10
			if fall && i >= 6 {
				capacity = 400 + float64(i%3)*10
			}
			files = append(files, writeResult(t, dir, fmt.Sprintf("%c.json", 'a'+i), fmt.Sprintf("2026-11-%02d 02:17", i+1), capacity, nil))
		}
		file := filepath.Join(dir, "history.jsonl")
		var stdout, stderr bytes.Buffer
		require.Equal(t, exitPass, run(append([]string{"history", "add", "-file", file}, files...), &stdout, &stderr), stderr.String())
		stdout.Reset()
		code := run([]string{"history", "changes", "-file", file, "-format", "text"}, &stdout, &stderr)
		if !fall {
			assert.Equal(t, exitPass, code, stderr.String())
			assert.Equal(t, "no change found\n", stdout.String())
			continue
		}
		assert.Equal(t, exitFail, code, stderr.String())
		assert.Contains(t, stdout.String(), "TestLoad_Smoke: capacity stepped ×0.6")
		assert.Contains(t, stdout.String(), "between the nights of commits `fffffff` (2026-11-06) and `ggggggg` (2026-11-07)")
		stdout.Reset()
		assert.Equal(t, exitFail, run([]string{"history", "changes", "-file", file, "-format", "json"}, &stdout, &stderr))
		var found []findingJSON
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &found), stdout.String())
		require.Len(t, found, 1)
		assert.Equal(t, "step", found[0].Kind)
		assert.True(t, found[0].Worse)
		assert.Equal(t, strings.Repeat("g", 40), found[0].After)
	}
}

// A step in the harness's own cost (the generator's CPU on a busier
// machine) is told but neither counted as the system's change for the
// worse (exit status, -worse) nor bisected.
func TestHarnessStepsAreNotBisected(t *testing.T) {
	step := func(figure string, harness, worse bool) caphistory.Finding {
		return caphistory.Finding{Scenario: "TestLoad_Tiny", Figure: figure, Step: true, Worse: worse, Harness: harness,
			Before: caphistory.Row{Commit: "a"}, After: caphistory.Row{Commit: "b"}}
	}
	found := []caphistory.Finding{step("cpu/ok generator", true, true), step("cpu/ok tiny", false, true), step("throughput", false, false)}
	got := worse(found)
	require.Len(t, got, 1)
	assert.Equal(t, "cpu/ok tiny", got[0].Figure)
	groups := stepGroups(got)
	require.Len(t, groups, 1)
	assert.Len(t, groups[0], 1, "the generator's step is not among the figures that decide the bisection")
	assert.Empty(t, worse(found[:1]), "a harness step alone: exit 0")
}
