package loadtest_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// pprofServer serves net/http/pprof's handlers, as a target started with
// its profiling on does.
func pprofServer(t *testing.T) string {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/debug/pprof"
}

// profileRun runs two 2 s steps, the second failing, profiling src.
func profileRun(t *testing.T, dir string, every bool, src ...loadtest.ProfileSource) (*loadtest.Result, []string) {
	var mu sync.Mutex
	var logs []string
	res := run(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
		Plan:     loadtest.Levels(0, 2*time.Second, 10, 20),
		Checks: []loadtest.Check{loadtest.Custom("level below 15", func(s *loadtest.StepResult) error {
			if s.Step.Level > 15 {
				return errors.New("level too high")
			}
			return nil
		})},
		Profiles: src, ProfileDir: dir, ProfileEvery: every,
		Logf: func(f string, a ...any) { mu.Lock(); logs = append(logs, fmt.Sprintf(f, a...)); mu.Unlock() },
	})
	require.Len(t, res.Steps, 2)
	require.Equal(t, result.Fail, res.Steps[1].Verdict)
	return res, logs
}

func filesIn(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		require.Greater(t, len(b), 2)
		assert.Equal(t, []byte{0x1f, 0x8b}, b[:2], "%s is a gzipped pprof profile", e.Name())
	}
	sort.Strings(out)
	return out
}

// TestProfilesOfTheFirstBreach keeps, by default, only the profiles of the
// first failing step: CPU during its hold, heap and goroutines at its end.
func TestProfilesOfTheFirstBreach(t *testing.T) {
	dir := t.TempDir()
	res, _ := profileRun(t, dir, false, loadtest.ProfileSource{Component: "relay", URL: pprofServer(t)})
	assert.Empty(t, res.Steps[0].Profiles, "a passing step keeps no profiles")
	var kinds []string
	for _, p := range res.Steps[1].Profiles {
		assert.Equal(t, "relay", p.Component)
		assert.FileExists(t, p.Path)
		kinds = append(kinds, p.Type)
	}
	sort.Strings(kinds)
	assert.Equal(t, []string{"cpu", "goroutine", "heap"}, kinds)
	assert.Equal(t, []string{"step02-relay-cpu.pb.gz", "step02-relay-goroutine.pb.gz", "step02-relay-heap.pb.gz"}, filesIn(t, dir),
		"the passing step's profiles are removed")
}

// TestProfilesOfAPassingRun leave nothing behind: no profile, no
// directory.
func TestProfilesOfAPassingRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "profiles")
	res := run(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
		Plan:     loadtest.Levels(0, 2*time.Second, 10),
		Profiles: []loadtest.ProfileSource{{Component: "relay", URL: pprofServer(t)}}, ProfileDir: dir,
	})
	assert.Equal(t, result.Pass, res.Verdict)
	assert.Empty(t, res.Steps[0].Profiles)
	assert.NoDirExists(t, dir)
}

// TestProfilesOfEveryHold keeps every hold's profiles with ProfileEvery
// (LOAD_PROFILE=<dir>), and a source that does not serve pprof is named
// in the log without stopping the run.
func TestProfilesOfEveryHold(t *testing.T) {
	dir := t.TempDir()
	none := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(none.Close)
	res, logs := profileRun(t, dir, true,
		loadtest.ProfileSource{Component: "relay", URL: pprofServer(t)},
		loadtest.ProfileSource{Component: "db", URL: none.URL + "/debug/pprof"})
	assert.Len(t, res.Steps[0].Profiles, 3)
	assert.Len(t, res.Steps[1].Profiles, 3)
	assert.Len(t, filesIn(t, dir), 6)
	assert.Contains(t, strings.Join(logs, "\n"), "profile of db")
	assert.Contains(t, strings.Join(logs, "\n"), "404 Not Found")
}
