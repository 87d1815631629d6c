package history_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/history"
	"github.com/headroom-dev/headroom/loadtest/result"
)

const (
	classA = "cpu_model=Xeon;cores=2;backend=docker;target_cpus=1;target_memory=536870912"
	classB = "cpu_model=Xeon;cores=8;backend=docker;target_cpus=1;target_memory=536870912"
)

func at(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

// row is a passing ladder row of scenario TestLoad_Smoke in class A.
func row(date, commit string, capacity float64, change func(r *history.Row)) history.Row {
	r := history.Row{Schema: history.Schema, Date: at(date), Scenario: "TestLoad_Smoke", Commit: commit,
		Model: "users", Unit: "users", Plan: "ladder", PlanKey: "ladder 9000,9700,10000 (ramp 30s, hold 1m30s)",
		Capacity: capacity, FirstFailure: capacity + 300, Verdict: result.Fail, Class: classA,
		Checks: []string{"no component stopped unexpectedly", "p95 of tools/call below 15s"},
		Params: map[string]string{"GAP": "90s", "USERS": "9000,9700,10000", "population": "dated " + date}}
	if change != nil {
		change(&r)
	}
	return r
}

// historyRows is a hand-made history, in the order it was added (not the
// order it ran).
func historyRows() []history.Row {
	return []history.Row{
		row("2026-07-22 09:00", "bbbbbbb0000", 9700, func(r *history.Row) { r.Note = "Database pools keep idle connections" }),
		row("2026-07-20 10:00", "aaaaaaa0000", 9000, func(r *history.Row) { r.Subject = "Initial pool sizes" }),
		row("2026-07-22 11:00", "ccccccc0000", 9700, func(r *history.Row) {
			r.Subject, r.Dirty = "Session validation collapsed to one query", true
		}),
		row("2026-07-22 15:00", "ddddddd0000", 12000, func(r *history.Row) { r.Class, r.Note = classB, "Measured on the bigger runner" }),
		row("2026-08-01 08:00", "eeeeeee0000", 10000, func(r *history.Row) {
			r.FirstFailure, r.LowerBound, r.Verdict, r.Note = 0, true, result.Pass, "Pool size | 2x"
		}),
		row("2026-08-31 12:00", "fffffff0000", 8859, func(r *history.Row) {
			r.NewBaseline, r.Note = true, "Workload model rebuilt from measured production traffic"
		}),
	}
}

// The table of a hand-made history, cell by cell: newest first, same-day
// rows numbered, bold only for new figures, lower bounds, changes against
// the previous comparable row (an older one named), and why a row does not
// compare.
func TestHistory_Table(t *testing.T) {
	want := "" +
		"| Date | Commit | Users | Change | What changed |\n" +
		"|---|---|---:|---:|---|\n" +
		"| 2026-08-31 | `fffffff` | **8,859** | — | Workload model rebuilt from measured production traffic — new baseline, not comparable with earlier rows |\n" +
		"| 2026-08-01 | `eeeeeee` | **≥ 10,000** | ≥ +3.1% vs 2026-07-22 (2) | Pool size \\| 2x — not comparable with the previous row (environment class cores 8 → 2) |\n" +
		"| 2026-07-22 (3) | `ddddddd` | **12,000** | — | Measured on the bigger runner — new baseline (environment class cores 2 → 8), not comparable with earlier rows |\n" +
		"| 2026-07-22 (2) | `ccccccc` (dirty) | 9,700 | ±0% | Session validation collapsed to one query (and uncommitted changes) |\n" +
		"| 2026-07-22 (1) | `bbbbbbb` | **9,700** | +7.8% | Database pools keep idle connections |\n" +
		"| 2026-07-20 | `aaaaaaa` | **9,000** | — | Initial pool sizes |\n" +
		"\n" + history.Legend + "\n"
	got := history.Markdown(historyRows(), "TestLoad_Smoke")
	assert.Equal(t, want, got, "got:\n%s", got)
	assert.Equal(t, got, history.Markdown(historyRows(), ""), "one scenario: no Scenario column")
	assert.Empty(t, history.Markdown(historyRows(), "TestLoad_Other"))
}

func TestHistory_Order_NewestFirstNumberedByDay(t *testing.T) {
	rows := historyRows()
	// Two rows of one start keep the order they were added in.
	rows = append(rows, row("2026-07-20 10:00", "a2", 9000, nil))
	got := history.Order(rows, "")
	var labels, commits []string
	for _, r := range got {
		labels = append(labels, r.Label)
		commits = append(commits, r.Commit[:2])
	}
	assert.Equal(t, []string{"2026-08-31", "2026-08-01", "2026-07-22 (3)", "2026-07-22 (2)", "2026-07-22 (1)", "2026-07-20 (2)", "2026-07-20 (1)"}, labels)
	assert.Equal(t, []string{"ff", "ee", "dd", "cc", "bb", "a2", "aa"}, commits)

	// Comparable is with the row just before; Previous the one compared with.
	assert.Equal(t, []bool{false, false, false, true, true, true, false}, func() (c []bool) {
		for _, r := range got {
			c = append(c, r.Comparable)
		}
		return c
	}())
	assert.Equal(t, "marked as a new baseline", got[0].Break)
	assert.Nil(t, got[0].Previous)
	assert.Equal(t, "ccccccc0000", got[1].Previous.Commit)
	assert.Equal(t, "environment class cores 8 → 2", got[1].Break)
	assert.Nil(t, got[2].Previous)
	assert.Equal(t, "bbbbbbb0000", got[3].Previous.Commit)
	assert.Equal(t, "a2", got[4].Previous.Commit)
	// Order does not change its input.
	assert.Empty(t, rows[0].Label)
}

// An invalid row is never what a later row's change is against; -short and
// knob changes break comparability, derived parameters do not.
func TestHistory_Order_Comparability(t *testing.T) {
	rows := []history.Row{
		row("2026-07-01 10:00", "a", 1000, nil),
		row("2026-07-02 10:00", "b", 3000, func(r *history.Row) { r.Verdict = result.Invalid }),
		row("2026-07-03 10:00", "c", 1100, func(r *history.Row) { r.Params["SEED"], r.Params["USERS"] = "7", "1,2" }),
		row("2026-07-04 10:00", "d", 1100, func(r *history.Row) { r.Params["GAP"] = "30s" }),
		row("2026-07-05 10:00", "e", 1100, func(r *history.Row) { r.Short = true }),
		row("2026-07-06 10:00", "f", 1100, func(r *history.Row) { r.PlanKey = "knee ±10% (ramp 0s, hold 10s, 1 trial(s))" }),
		row("2026-07-07 10:00", "g", 1100, func(r *history.Row) {
			r.PlanKey, r.Params["MAX"], r.Params["PROBES"] = "knee ±10% (ramp 0s, hold 10s, 1 trial(s))", "5000", "20"
			r.Checks = []string{"p95 of tools/call below 15s", "no component stopped unexpectedly"}
		}),
		row("2026-07-08 10:00", "h", 1100, func(r *history.Row) {
			r.PlanKey = "knee ±10% (ramp 0s, hold 10s, 1 trial(s))"
			r.Checks = []string{"no component stopped unexpectedly", "p95 of tools/call below 10s"}
		}),
	}
	got := history.Order(rows, "TestLoad_Smoke")
	byCommit := map[string]history.Row{}
	for _, r := range got {
		byCommit[r.Commit] = r
	}
	assert.Equal(t, "a", byCommit["c"].Previous.Commit, "the invalid row is skipped")
	assert.True(t, byCommit["c"].Comparable, "SEED, USERS and the population do not decide")
	assert.Equal(t, "knob GAP 90s → 30s", byCommit["d"].Break)
	assert.Equal(t, "run size full → -short; knob GAP 30s → 90s", byCommit["e"].Break)
	assert.Contains(t, byCommit["f"].Break, "plan ladder 9000,9700,10000 (ramp 30s, hold 1m30s) → knee")
	assert.True(t, byCommit["g"].Comparable, "the knee's maximum and probe budget, the checks' order do not decide")
	assert.Equal(t, `checks +"p95 of tools/call below 10s", -"p95 of tools/call below 15s"`, byCommit["h"].Break)
	for _, c := range []string{"d", "e", "f", "h"} {
		assert.Nil(t, byCommit[c].Previous, c)
	}

	md := history.Markdown(rows, "")
	assert.Contains(t, md, "| `c` | **1,100** | +10.0% vs 2026-07-01 |")
	assert.Contains(t, md, "| `b` | **3,000** (invalid) | +200.0% |")
	assert.Contains(t, md, "| `e` | **1,100** (short) | — |")
}

func TestHistory_Markdown_ScenariosAndUnits(t *testing.T) {
	rows := []history.Row{
		row("2026-07-01 10:00", "a", 800, nil),
		row("2026-07-01 11:00", "b", 400, func(r *history.Row) {
			r.Scenario, r.Model, r.Unit, r.Capacity, r.FirstFailure, r.Verdict = "TestLoad_PlainHTTP", "arrivals", "arrivals/s", 0, 100, result.Fail
		}),
		row("2026-07-01 12:00", "c", 900, func(r *history.Row) { r.Scenario = "TestLoad_Smoke/backend=docker" }),
	}
	md := history.Markdown(rows, "")
	assert.Contains(t, md, "| Date | Scenario | Commit | Capacity | Change | What changed |\n|---|---|---|---:|---:|---|\n")
	assert.Contains(t, md, "| 2026-07-01 (2) | TestLoad_PlainHTTP | `b` | **< 100 arrivals/s** | — | — |")
	assert.Contains(t, md, "| 2026-07-01 (1) | TestLoad_Smoke | `a` | **800 users** | — | — |")
	// The scenario's subtests belong to its history; the rows of one
	// scenario never compare with another's.
	smoke := history.Markdown(rows, "TestLoad_Smoke")
	assert.Contains(t, smoke, "| Date | Scenario | Commit | Users |")
	assert.Contains(t, smoke, "| 2026-07-01 (2) | TestLoad_Smoke/backend=docker | `c` | **900** | — |")
	assert.NotContains(t, smoke, "PlainHTTP")

	text := history.Text(rows, "TestLoad_PlainHTTP")
	assert.Equal(t, "DATE        COMMIT  ARRIVALS/S  CHANGE  VERDICT  WHAT CHANGED\n"+
		"2026-07-01  b       < 100       —       fail     —\n", text)
}

func sample(change func(r *loadtest.Result)) *loadtest.Result {
	r := &loadtest.Result{Schema: result.SchemaVersion, Scenario: "TestKnee", Model: "users", Checks: []string{"no component stopped unexpectedly"},
		Plan:   result.PlanInfo{Type: "knee", Knee: &result.KneeParams{Start: 100, Factor: 2, Max: 1000, Hold: 5 * time.Second}},
		Params: map[string]string{"SUBSCRIBERS": "200"}, Start: at("2026-07-22 09:30").In(time.FixedZone("CEST", 7200)),
		Provenance:  result.Provenance{Commit: "0123456789abcdef", Dirty: true, Command: "go test -tags load -run TestKnee ./loadtest/scenarios"},
		Environment: result.Environment{Class: classA}, Capacity: 1000, Verdict: result.Pass,
		Conclusion: "no breach up to the maximum level 1000; capacity is at least 1000 — raise Max to search further"}
	if change != nil {
		change(r)
	}
	return r
}

func TestHistory_RowFromResult(t *testing.T) {
	r := history.RowFromResult(sample(nil), "  Raised the pool  ")
	assert.Equal(t, history.Row{Schema: history.Schema, Date: at("2026-07-22 09:30"), Scenario: "TestKnee",
		Commit: "0123456789abcdef", Dirty: true, Model: "users", Unit: "users", Plan: "knee",
		PlanKey: "knee ±10% (ramp 0s, hold 5s, 1 trial(s))", Capacity: 1000, LowerBound: true, Verdict: result.Pass,
		Class: classA, Checks: []string{"no component stopped unexpectedly"}, Params: map[string]string{"SUBSCRIBERS": "200"}, Conclusion: sample(nil).Conclusion,
		Command: "go test -tags load -run TestKnee ./loadtest/scenarios", Note: "Raised the pool"}, r)
	assert.Equal(t, time.UTC, r.Date.Location())

	// A knee that bracketed its knee is no lower bound; its search's
	// maximum does not decide comparability.
	knee := history.RowFromResult(sample(func(r *loadtest.Result) {
		r.Capacity, r.FirstFailure, r.Conclusion = 730, 800, "knee between 730 (pass) and 800 (fail), within 10%"
		r.Plan.Knee = &result.KneeParams{Start: 100, Factor: 2, Max: 5000, Hold: 5 * time.Second}
	}), "")
	assert.False(t, knee.LowerBound)
	assert.Equal(t, r.PlanKey, knee.PlanKey)
	// Rows of one start keep the order they were added in: r is the newer.
	assert.Contains(t, history.Markdown([]history.Row{knee, r}, ""), "| 2026-07-22 (2) | `0123456` (dirty) | **≥ 1,000** | ≥ +37.0% | Raised the pool |")

	// A ladder whose every step passed: at least its top level.
	ladder := history.RowFromResult(sample(func(r *loadtest.Result) {
		r.Model, r.Conclusion = "arrivals", "ran 2 of 2 steps"
		r.Plan = result.PlanInfo{Type: "ladder", Steps: []loadtest.Step{{Level: 500, Hold: time.Second}, {Level: 1000, Ramp: time.Second, Hold: time.Second}}}
	}), "")
	assert.True(t, ladder.LowerBound)
	assert.Equal(t, "arrivals/s", ladder.Unit)
	assert.Equal(t, "ladder 500 (ramp 0s, hold 1s), 1000 (ramp 1s, hold 1s)", ladder.PlanKey)

	// A custom workload's knobs tell the unit.
	custom := history.RowFromResult(sample(func(r *loadtest.Result) { r.Model, r.Params = "custom", map[string]string{"RATES": "1,2"} }), "")
	assert.Equal(t, "arrivals/s", custom.Unit)
	custom = history.RowFromResult(sample(func(r *loadtest.Result) { r.Model, r.Params = "custom", nil }), "")
	assert.Empty(t, custom.Unit)
}

func TestHistory_Append_RefusesIncompleteResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h", "history.jsonl")
	ok := history.RowFromResult(sample(nil), "")
	for _, change := range []func(r *loadtest.Result){
		func(r *loadtest.Result) {
			r.Partial, r.Verdict, r.Conclusion = true, result.Incomplete, "interrupted at step 2"
		},
		func(r *loadtest.Result) { r.Verdict, r.Conclusion = result.Incomplete, "" },
	} {
		bad := history.RowFromResult(sample(change), "")
		err := history.Append(path, ok, bad)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "incomplete result")
		assert.Contains(t, err.Error(), "run the scenario to the end and add that result")
		_, err = os.Stat(path)
		assert.ErrorIs(t, err, fs.ErrNotExist, "nothing written, not even the valid row")
	}
	assert.ErrorContains(t, history.Append(path, history.Row{Date: at("2026-07-01 10:00")}), "without a scenario")

	require.NoError(t, history.Append(path, ok))
	rows, err := history.Read(path)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.Equal(t, ok, rows[0])
}

// Concurrent appends, each with its own file descriptor, never interleave
// their lines: every row reads back whole.
func TestHistory_Append_ConcurrentAppendsDoNotInterleave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	const writers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r := row("2026-07-01 10:00", fmt.Sprintf("%d-%d", w, i), 1000, nil)
				// Long notes: over two pages, past a pipe's or a page's
				// atomic write.
				r.Note = strings.Repeat(string(rune('a'+w)), 9_000+i)
				if err := history.Append(path, r); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	rows, err := history.Read(path)
	require.NoError(t, err)
	require.Len(t, rows, writers*each)
	seen := map[string]bool{}
	for _, r := range rows {
		var w, i int
		_, err := fmt.Sscanf(r.Commit, "%d-%d", &w, &i)
		require.NoError(t, err)
		assert.Equal(t, strings.Repeat(string(rune('a'+w)), 9_000+i), r.Note, r.Commit)
		seen[r.Commit] = true
	}
	assert.Len(t, seen, writers*each)
}

// History is never rewritten: an append keeps every byte before it, and a
// line torn by a crash is ended, not joined to the new row, and reported.
func TestHistory_Append_NeverRewritesAndSurvivesATornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	require.NoError(t, history.Append(path, row("2026-07-01 10:00", "a", 1000, nil)))
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(before), "\n"))
	require.NoError(t, history.Append(path, row("2026-07-02 10:00", "b", 1000, nil), row("2026-07-03 10:00", "c", 1000, nil)))
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(after), string(before)))
	assert.Equal(t, 3, strings.Count(string(after), "\n"))

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"schema":1,"date":"2026-07-04T`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, history.Append(path, row("2026-07-05 10:00", "e", 1000, nil)))
	_, err = history.Read(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), path+":4: not a history row")
	assert.Contains(t, err.Error(), "repair or delete that line by hand")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 5)
	assert.Contains(t, lines[4], `"commit":"e"`)
}

func TestHistory_Read(t *testing.T) {
	dir := t.TempDir()
	_, err := history.Read(filepath.Join(dir, "missing.jsonl"))
	assert.True(t, errors.Is(err, fs.ErrNotExist))

	newer := filepath.Join(dir, "newer.jsonl")
	require.NoError(t, os.WriteFile(newer, []byte("\n"+`{"schema":99,"scenario":"T"}`+"\n"), 0o644))
	_, err = history.Read(newer)
	assert.ErrorContains(t, err, "newer.jsonl:2: row format 99 is newer than this Headroom's 1; upgrade")

	// HTML characters and notes stay readable in the file.
	plain := filepath.Join(dir, "plain.jsonl")
	require.NoError(t, history.Append(plain, row("2026-07-01 10:00", "a", 1000, func(r *history.Row) { r.Note = "p99 < 15s & ≥ 2x\nsecond line" })))
	data, err := os.ReadFile(plain)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"note":"p99 < 15s & ≥ 2x\nsecond line"`)
}

func TestHistory_DefaultPath(t *testing.T) {
	root, err := files.ModuleRoot()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "testdata", "history.jsonl"), history.DefaultPath())
}

func TestHistory_CommitSubject(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "Database pools keep idle connections", "-m", "Body.")
	head := git("rev-parse", "HEAD")
	assert.Equal(t, "Database pools keep idle connections", history.CommitSubject(dir, head))
	assert.Equal(t, "Database pools keep idle connections", history.CommitSubject(dir, head[:10]))
	assert.Empty(t, history.CommitSubject(dir, "HEAD"), "only commit ids")
	assert.Empty(t, history.CommitSubject(dir, "--output=/tmp/x"))
	assert.Empty(t, history.CommitSubject(dir, "deadbeefdeadbeef"))
	assert.Empty(t, history.CommitSubject(dir, ""))
}

// A history holds each run once, also when two processes add the same
// result at once: the check is made under the lock.
func TestHistory_Append_SameRunOnceUnderConcurrency(t *testing.T) {
	for trial := range 30 {
		path := filepath.Join(t.TempDir(), "history.jsonl")
		r := row("2026-07-01 10:00", "abc", 1000, nil)
		var wg sync.WaitGroup
		var added, refused atomic.Int32
		for range 2 {
			wg.Go(func() {
				switch err := history.Append(path, r); {
				case err == nil:
					added.Add(1)
				case errors.Is(err, history.ErrAlreadyAdded):
					refused.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		rows, err := history.Read(path)
		require.NoError(t, err)
		require.Len(t, rows, 1, "trial %d: the run added twice", trial)
		assert.Equal(t, int32(1), added.Load())
		assert.Equal(t, int32(1), refused.Load())
	}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	r := row("2026-07-01 10:00", "abc", 1000, nil)
	err := history.Append(path, r, r)
	assert.ErrorIs(t, err, history.ErrAlreadyAdded, "one run given twice")
	assert.NoFileExists(t, path, "nothing added")
}
