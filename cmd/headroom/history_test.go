package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	caphistory "github.com/headroom-dev/headroom/loadtest/history"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// writeResult writes a finished users-model ladder result of scenario
// TestLoad_Smoke to dir/name, changed by change.
func writeResult(t *testing.T, dir, name, start string, capacity float64, change func(r *loadtest.Result)) string {
	t.Helper()
	begin, err := time.Parse("2006-01-02 15:04", start)
	require.NoError(t, err)
	res := &loadtest.Result{Schema: result.SchemaVersion, Scenario: "TestLoad_Smoke", Model: "users",
		Plan:   result.PlanInfo{Type: "ladder", Steps: []loadtest.Step{{Level: 400, Hold: time.Second}, {Level: 800, Hold: time.Second}}},
		Params: map[string]string{"USERS": "400,800", "GAP": "90s"}, Start: begin, End: begin.Add(time.Minute),
		// Commits no repository holds: no subject.
		Provenance:  result.Provenance{Commit: strings.Repeat(name[:1], 40), Command: "go test -tags load -run TestLoad_Smoke ./loadtest/scenarios"},
		Environment: result.Environment{CPUModel: "Xeon", Cores: 2, Class: "cpu_model=Xeon;cores=2;backend=docker;target_cpus=1;target_memory=0"},
		Capacity:    capacity, FirstFailure: 800, Verdict: result.Fail, Conclusion: "ladder stopped after step 2 (level 800) was fail"}
	if change != nil {
		change(res)
	}
	p := filepath.Join(dir, name)
	require.NoError(t, res.WriteFile(p))
	return p
}

func TestHistoryAddShow(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "history.jsonl")
	a := writeResult(t, dir, "a.json", "2026-07-22 09:00", 400, nil)
	b := writeResult(t, dir, "b.json", "2026-07-22 11:00", 400, nil)
	c := writeResult(t, dir, "c.json", "2026-08-31 10:00", 800, func(r *loadtest.Result) {
		r.FirstFailure, r.Verdict, r.Conclusion = 0, result.Pass, "ran 2 of 2 steps"
	})

	var stdout, stderr bytes.Buffer
	require.Equal(t, exitPass, run([]string{"history", "add", "-file", file, "-note", "Database pools keep idle connections", a}, &stdout, &stderr), stderr.String())
	assert.Equal(t, "added to "+file+": TestLoad_Smoke, 2026-07-22 09:00, 400 users (fail)\n", stdout.String())
	require.Equal(t, exitPass, run([]string{"history", "add", "-file", file, b}, &stdout, &stderr), stderr.String())
	stdout.Reset()
	require.Equal(t, exitPass, run([]string{"history", "add", "-file", file, "-new-baseline", "-note", "Workload model rebuilt | new mix", c}, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "at least 800 users (pass)")

	rows, err := caphistory.Read(file)
	require.NoError(t, err)
	require.Len(t, rows, 3)
	assert.Equal(t, "a.json", filepath.Base(rows[0].Result))
	assert.True(t, rows[2].NewBaseline)

	stdout.Reset()
	require.Equal(t, exitPass, run([]string{"history", "show", "-file", file}, &stdout, &stderr), stderr.String())
	assert.Equal(t, ""+
		"| Date | Commit | Users | Change | What changed |\n"+
		"|---|---|---:|---:|---|\n"+
		"| 2026-08-31 | `ccccccc` | **≥ 800** | — | Workload model rebuilt \\| new mix — new baseline, not comparable with earlier rows |\n"+
		"| 2026-07-22 (2) | `bbbbbbb` | 400 | ±0% | — |\n"+
		"| 2026-07-22 (1) | `aaaaaaa` | **400** | — | Database pools keep idle connections |\n"+
		"\n"+caphistory.Legend+"\n", stdout.String())

	stdout.Reset()
	require.Equal(t, exitPass, run([]string{"history", "show", "-file", file, "-scenario", "TestLoad_Smoke", "-format", "text"}, &stdout, &stderr), stderr.String())
	assert.Equal(t, ""+
		"DATE            COMMIT   USERS  CHANGE  VERDICT  WHAT CHANGED\n"+
		"2026-08-31      ccccccc  ≥ 800  —       pass     Workload model rebuilt | new mix — new baseline, not comparable with earlier rows\n"+
		"2026-07-22 (2)  bbbbbbb  400    ±0%     fail     —\n"+
		"2026-07-22 (1)  aaaaaaa  400    —       fail     Database pools keep idle connections\n", stdout.String())

	// The listing of results is still the default.
	stdout.Reset()
	require.Equal(t, exitPass, run([]string{"history", dir}, &stdout, &stderr), stderr.String())
	assert.Equal(t, 4, strings.Count(stdout.String(), "\n"), stdout.String())
	assert.True(t, strings.HasPrefix(stdout.String(), "START"))
}

// history add refuses an incomplete result, naming the fix, and adds
// nothing of the other results given with it; a run already in the history
// is refused too.
func TestHistoryAddRefuses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "history.jsonl")
	ok := writeResult(t, dir, "a.json", "2026-07-22 09:00", 400, nil)
	partial := writeResult(t, dir, "b.json", "2026-07-22 10:00", 400, func(r *loadtest.Result) {
		r.Partial, r.Verdict, r.Conclusion = true, result.Incomplete, "interrupted during step 2"
	})
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"history", "add", "-file", file, ok, partial}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), partial+": incomplete result (interrupted during step 2)")
	assert.Contains(t, stderr.String(), "run the scenario to the end and add that result (go test -tags load -run TestLoad_Smoke ./loadtest/scenarios); nothing was added")
	assert.NoFileExists(t, file)
	assert.Empty(t, stdout.String())

	require.Equal(t, exitPass, run([]string{"history", "add", "-file", file, ok}, &stdout, &stderr), stderr.String())
	before, err := os.ReadFile(file)
	require.NoError(t, err)
	stderr.Reset()
	assert.Equal(t, exitUsage, run([]string{"history", "add", "-file", file, ok}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "is already in "+file+"; nothing was added")
	other := writeResult(t, dir, "c.json", "2026-07-23 09:00", 400, nil)
	stderr.Reset()
	assert.Equal(t, exitUsage, run([]string{"history", "add", "-file", file, other, other}, &stdout, &stderr), "twice in one call")
	assert.Contains(t, stderr.String(), "is given twice")
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))

	stderr.Reset()
	assert.Equal(t, exitUsage, run([]string{"history", "add", "-file", file}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "give one or more result files")
}

func TestHistoryShowErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "history.jsonl")
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitUsage, run([]string{"history", "show", "-file", file}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "no history at "+file+": add results with headroom history add RESULT.json")

	require.Equal(t, exitPass, run([]string{"history", "add", "-file", file, writeResult(t, dir, "a.json", "2026-07-22 09:00", 400, nil)}, &stdout, &stderr))
	stderr.Reset()
	assert.Equal(t, exitUsage, run([]string{"history", "show", "-file", file, "-scenario", "TestLoad_Smok"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `no row of scenario "TestLoad_Smok" in `+file+"; it holds TestLoad_Smoke")
	stderr.Reset()
	assert.Equal(t, exitUsage, run([]string{"history", "show", "-file", file, "-format", "html"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `-format "html": give md or text`)
}

func TestHistoryHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitPass, run([]string{"help"}, &stdout, &stderr))
	assert.Contains(t, stdout.String(), "history add [-note TEXT]")
	assert.Contains(t, stdout.String(), "history show [-scenario NAME]")
	assert.Equal(t, exitPass, run([]string{"history", "add", "-h"}, &stdout, &stderr))
	assert.Equal(t, exitUsage, run([]string{"history", "show", "-format"}, &stdout, &stderr))
}
