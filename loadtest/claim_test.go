package loadtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// setupTB is a test seen by Claim: its name, whether it failed, and its
// cleanups, run when the test calls finish — as a test killed before its
// end never runs them.
type setupTB struct {
	testing.TB
	name     string
	failed   bool
	cleanups []func()
}

func (s *setupTB) Name() string      { return s.name }
func (s *setupTB) Failed() bool      { return s.failed }
func (s *setupTB) Cleanup(f func())  { s.cleanups = append(s.cleanups, f) }
func (s *setupTB) Helper()           {}
func (s *setupTB) Fatal(args ...any) { s.TB.Helper(); s.TB.Fatal(args...) }
func (s *setupTB) finish() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// passedBefore writes a finished, passing result of the test name, with
// its report and logs, as the run before left them.
func passedBefore(t *testing.T, name string) string {
	t.Helper()
	path, _, err := files.ResultPaths(name)
	require.NoError(t, err)
	old := &loadtest.Result{Schema: result.SchemaVersion, Scenario: name, Verdict: result.Pass, Capacity: 80,
		Steps: []*loadtest.StepResult{{Step: loadtest.Step{Level: 80, Hold: time.Second}, Verdict: result.Pass}}}
	require.NoError(t, old.WriteFile(path))
	base := strings.TrimSuffix(path, ".json")
	require.NoError(t, os.WriteFile(base+".md", []byte("capacity **80**"), 0o644))
	require.NoError(t, os.MkdirAll(base+".logs", 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base+".logs", "relay.log"), []byte("old log"), 0o644))
	return path
}

// A run owns its result path from its first moment: whatever happens
// before its load — a kill, a failed start-up — the path never shows the
// run before's verdict as current; that one is kept beside it.
func TestClaimLeavesNoOlderVerdictStanding(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOADTEST_RESULTS_DIR", filepath.Join(dir, "results"))
	t.Setenv("LOADTEST_BASELINE_DIR", filepath.Join(dir, "baselines"))
	current := func(path string) *result.Result {
		t.Helper()
		res, err := result.ReadResult(path)
		require.NoError(t, err)
		return res
	}

	// Killed during start-up: no cleanup runs; the stub is what stands.
	tb := &setupTB{TB: t, name: "TestLoad_Killed/db=postgres"}
	path := passedBefore(t, tb.name)
	loadtest.Claim(tb)
	got := current(path)
	assert.Equal(t, result.Incomplete, got.Verdict)
	assert.True(t, got.Partial)
	assert.Empty(t, got.Steps)
	assert.Contains(t, got.Conclusion, "died or was killed before its first step")
	assert.NotEmpty(t, got.Provenance.Command, "the stub names the run")
	base := strings.TrimSuffix(path, ".json")
	md, err := os.ReadFile(base + ".md")
	require.NoError(t, err)
	assert.Contains(t, string(md), "incomplete", "the report is this run's too")
	assert.NoDirExists(t, base+".logs", "the older run's logs are not beside this run's result")
	prev := current(base + ".previous.json")
	assert.Equal(t, result.Pass, prev.Verdict, "the run before is kept, named older")
	assert.FileExists(t, filepath.Join(base+".previous.logs", "relay.log"))

	// A second claim in one process (Test after fixtures.Start) keeps the
	// run before as it was: it does not move this run's stub over it.
	loadtest.Claim(tb)
	assert.Equal(t, result.Pass, current(base+".previous.json").Verdict)

	// Failed at start-up: the stub says so.
	tb = &setupTB{TB: t, name: "TestLoad_FailedStart/run"}
	path = passedBefore(t, tb.name)
	loadtest.Claim(tb)
	tb.failed = true
	tb.finish()
	got = current(path)
	assert.Equal(t, result.Incomplete, got.Verdict)
	assert.Contains(t, got.Conclusion, "failed before its load began")

	// A test that passes without a run (a fixture's own test) leaves no
	// result behind; the run before stays kept aside.
	tb = &setupTB{TB: t, name: "TestStackAlone/run"}
	path = passedBefore(t, tb.name)
	loadtest.Claim(tb)
	tb.finish()
	assert.NoFileExists(t, path)
	assert.FileExists(t, strings.TrimSuffix(path, ".json")+".previous.json")
}

// A run's own result replaces its stub; the run before stays beside it.
func TestTestAfterClaimWritesItsResult(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOADTEST_RESULTS_DIR", filepath.Join(dir, "results"))
	t.Setenv("LOADTEST_BASELINE_DIR", filepath.Join(dir, "baselines"))
	path := passedBefore(t, t.Name())
	loadtest.Claim(t) // as fixtures.Start does
	res := loadtest.Test(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
		Plan:     loadtest.Levels(0, 500*time.Millisecond, 20),
	})
	got, err := result.ReadResult(path)
	require.NoError(t, err)
	assert.Equal(t, res.Verdict, got.Verdict)
	assert.Len(t, got.Steps, 1)
	assert.Equal(t, float64(20), got.Steps[0].Step.Level)
	prev, err := result.ReadResult(strings.TrimSuffix(path, ".json") + ".previous.json")
	require.NoError(t, err)
	assert.Equal(t, float64(80), prev.Capacity)
}
