package loadtest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// queue is a synthetic system: one server that takes 1/capacity seconds
// per request, first come first served. Below its capacity a request waits
// for nothing; past it the queue, and the latency, grows up to a backlog of
// one second, beyond which requests are refused with a 503 — a sharp knee
// at a known load.
type queue struct {
	mu       sync.Mutex
	service  time.Duration
	nextFree time.Time
}

func (q *queue) do(ctx context.Context) loadtest.Response {
	q.mu.Lock()
	start := time.Now()
	if q.nextFree.After(start) {
		start = q.nextFree
	}
	if time.Until(start) > time.Second {
		q.mu.Unlock()
		return loadtest.Response{Outcome: loadtest.HTTP5xx}
	}
	q.nextFree = start.Add(q.service)
	done := q.nextFree
	q.mu.Unlock()
	select {
	case <-time.After(time.Until(done)):
		return loadtest.Response{Outcome: loadtest.OK}
	case <-ctx.Done():
		return loadtest.Response{Outcome: loadtest.Timeout}
	}
}

func kneeScenario(capacity float64, plan loadtest.Knee) loadtest.Scenario {
	q := &queue{service: time.Duration(float64(time.Second) / capacity)}
	return loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: q.do}}},
		Plan:     plan,
		Checks:   []loadtest.Check{loadtest.LatencyBelow("get", 95, 100*time.Millisecond)},
	}
}

func TestKneeSearchFindsTheKnee(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity float64
		plan     loadtest.Knee
	}{
		// Growing by 1.5 from 100/s to past 730/s, then bisecting.
		{"capacity=730", 730, loadtest.Knee{Start: 100, Factor: 1.5, Max: 10_000, Hold: 10 * time.Second}},
		// The start is already past the knee: the search goes down first.
		{"capacity=150", 150, loadtest.Knee{Start: 1000, Factor: 2, Max: 10_000, Hold: 10 * time.Second}},
		// Doubling, with three trials per level.
		{"capacity=2600,trials=3", 2600, loadtest.Knee{Start: 400, Factor: 2, Max: 6400, Hold: 5 * time.Second, Trials: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res := run(t, kneeScenario(tc.capacity, tc.plan))
				t.Log(res.Conclusion)
				assert.InEpsilon(t, tc.capacity, res.Capacity, 0.10, "capacity within ±10%% of the knee")
				assert.LessOrEqual(t, res.Capacity, tc.capacity, "the capacity passed, so it is below the knee")
				assert.Greater(t, res.FirstFailure, tc.capacity)
				assert.LessOrEqual(t, (res.FirstFailure-res.Capacity)/res.Capacity, 0.10)
				assert.Contains(t, res.Conclusion, "knee between")
				// The failing probes bracket the knee: the search's
				// finding, not a breach.
				assert.Equal(t, result.Pass, res.Verdict)
				assert.NoError(t, res.Err())
				md := res.Markdown()
				assert.Contains(t, md, "## Knee")
				assert.Contains(t, md, "| **"+format.Level(res.Capacity)+"** | **pass — get p95")
				assert.Contains(t, res.Ceiling(), "The ceiling is the SLO, with no resource near its limit: at "+format.Level(res.FirstFailure)+", p95 of get < 100ms")
				trials := max(tc.plan.Trials, 1)
				assert.LessOrEqual(t, len(res.Steps), 12*trials, "bounded probes")
				for _, s := range res.Steps {
					assert.True(t, s.Step.FromZero, "every probe starts from zero")
				}
			})
		})
	}
}

func TestKneeSearchThatNeverBreaksStopsAtMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, kneeScenario(100_000, loadtest.Knee{Start: 100, Factor: 2, Max: 1000, Hold: 5 * time.Second}))
		assert.Equal(t, []float64{100, 200, 400, 800, 1000}, levels(res))
		assert.Equal(t, 1000.0, res.Capacity)
		assert.Equal(t, 0.0, res.FirstFailure)
		assert.Contains(t, res.Conclusion, "no breach up to the maximum level 1000")
		assert.NoError(t, res.Err())
		assert.Equal(t, "Capacity is a lower bound, ≥ 1,000: no breach up to the highest level probed.", res.Ceiling())
	})
}

// TestKneeSearchThatFindsNothingIsABreach: when even the lowest level
// fails, the knee search is a breach, as a ladder whose every step failed.
func TestKneeSearchThatFindsNothingIsABreach(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, kneeScenario(20, loadtest.Knee{Start: 400, Factor: 2, Max: 1000, Hold: 5 * time.Second, MaxProbes: 3}))
		assert.Equal(t, []float64{400, 200, 100}, levels(res))
		assert.Equal(t, 0.0, res.Capacity)
		assert.Equal(t, result.Fail, res.Verdict)
		err := res.Err()
		require.ErrorIs(t, err, loadtest.ErrBreach)
		assert.ErrorContains(t, err, "no step passed")
		assert.ErrorContains(t, err, "step 3 (level 100): p95 of get < 100ms")
	})
}

func TestKneeSearchStopsOnAnInvalidProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := kneeScenario(100_000, loadtest.Knee{Start: 100, Factor: 2, Max: 100_000, Hold: 5 * time.Second})
		// In virtual time the generator never starves, so stand in for
		// starvation with a CPU bound that any use at all exceeds.
		s.SelfCheck.MaxCPU = 1e-12
		res := run(t, s)
		require.Len(t, res.Steps, 1)
		assert.Equal(t, result.Invalid, res.Steps[0].Verdict)
		assert.Contains(t, res.Conclusion, "search stopped: the probe at 100 was invalid")
		assert.Contains(t, res.Ceiling(), "No capacity found: the generator or the harness reached its limit first at 100 (the generator used")
		assert.Equal(t, result.Invalid, res.Verdict)
	})
}

func TestKneeValidation(t *testing.T) {
	for _, tc := range []struct {
		k    loadtest.Knee
		want string
	}{
		{loadtest.Knee{Factor: 2, Max: 10, Hold: time.Second}, "Start is 0"},                   // no start
		{loadtest.Knee{Start: 1, Factor: 1, Max: 10, Hold: time.Second}, "Factor is 1"},        // no growth
		{loadtest.Knee{Start: 10, Factor: 2, Max: 5, Hold: time.Second}, "Max is 5"},           // max below start
		{loadtest.Knee{Start: 1, Factor: 2, Max: 10}, "Hold is 0s"},                            // no hold
		{loadtest.Knee{Start: 1, Factor: 2, Max: 10, Hold: 1, Precision: 2}, "Precision is 2"}, // precision out of range
	} {
		assert.ErrorContains(t, tc.k.Validate(), tc.want)
	}
}

func levels(res *loadtest.Result) []float64 {
	var out []float64
	for _, s := range res.Steps {
		out = append(out, s.Step.Level)
	}
	return out
}

// loadtest.Test writes the result and its report, and a cancelled run
// writes what it measured, marked partial.
func TestTestWritesResultAndReport(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOADTEST_RESULTS_DIR", filepath.Join(dir, "results"))
	t.Setenv("LOADTEST_BASELINE_DIR", filepath.Join(dir, "baselines"))
	res := loadtest.Test(t, loadtest.Scenario{
		Params:   map[string]string{"RATE": "50"},
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
		Plan:     loadtest.Levels(0, time.Second, 50),
	})
	require.NotNil(t, res.Baseline)
	assert.True(t, res.Baseline.Missing)
	resPath, _, err := files.ResultPaths(t.Name())
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "results", "TestTestWritesResultAndReport"), filepath.Dir(resPath))
	got, err := result.ReadResult(resPath)
	require.NoError(t, err)
	assert.Equal(t, "TestTestWritesResultAndReport", got.Scenario)
	assert.Equal(t, map[string]string{"RATE": "50"}, got.Params)
	assert.Contains(t, got.Provenance.Command, "go test")
	assert.NotEmpty(t, got.Environment.Class)
	assert.Equal(t, result.Pass, got.Verdict)
	assert.FileExists(t, strings.TrimSuffix(resPath, ".json")+".md")
}

// TestTestAppendsStepSummary appends each scenario's Markdown verdict to
// GITHUB_STEP_SUMMARY, after what the job wrote there before, and leaves
// no summary where the variable is unset.
func TestTestAppendsStepSummary(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOADTEST_RESULTS_DIR", filepath.Join(dir, "results"))
	t.Setenv("LOADTEST_BASELINE_DIR", filepath.Join(dir, "baselines"))
	summary := filepath.Join(dir, "summary.md")
	require.NoError(t, os.WriteFile(summary, []byte("A/B base: abc\n"), 0o644))
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	s := loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
		Plan:     loadtest.Levels(0, 500*time.Millisecond, 20),
	}
	loadtest.Test(t, s)
	loadtest.Test(t, s)
	b, err := os.ReadFile(summary)
	require.NoError(t, err)
	got := string(b)
	assert.True(t, strings.HasPrefix(got, "A/B base: abc\n"), got)
	assert.Equal(t, 2, strings.Count(got, "# TestTestAppendsStepSummary\n"), got)
	assert.Contains(t, got, "**pass** — capacity **≥ 20 arrivals/s (the ladder's top; nothing near a limit)**")

	t.Setenv("GITHUB_STEP_SUMMARY", "")
	loadtest.Test(t, s)
	b, err = os.ReadFile(summary)
	require.NoError(t, err)
	assert.Equal(t, got, string(b))
}

func TestCancelledRunResultIsPartial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(3500*time.Millisecond, cancel)
		res, err := loadtest.Run(ctx, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:     loadtest.Levels(0, 2*time.Second, 100, 200),
		})
		require.ErrorIs(t, err, context.Canceled)
		path := filepath.Join(t.TempDir(), "r.json")
		require.NoError(t, res.WriteFile(path))
		got, err := result.ReadResult(path)
		require.NoError(t, err)
		assert.True(t, got.Partial)
		assert.Contains(t, got.Conclusion, "interrupted")
		require.Len(t, got.Steps, 2)
		assert.Equal(t, result.Incomplete, got.Steps[1].Verdict)
		assert.InDelta(t, 300, got.Steps[1].Kind("get").Total(), 5, "1.5 s of step 2 at 200/s was kept")
	})
}

// A probe from zero waits for the requests still in flight after the stop
// only as long as its ramp cannot: each is given Drain from the stop, of
// which the ramp counts. Requests that ignore cancellation (the lean HTTP
// client's run to their deadline) once held every knee probe's return to
// zero for the whole Drain, the upstream's slowest answers.
func TestFromZeroCountsTheRampInTheDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		deaf := func(context.Context) loadtest.Response { // a slow answer that ignores cancellation
			time.Sleep(30 * time.Second)
			return loadtest.Response{Outcome: loadtest.OK}
		}
		w := &loadtest.Users{Kinds: []string{"slow"}, Behavior: func(u *loadtest.User) {
			for u.Think(dist.Uniform[time.Duration]{Min: time.Second, Max: 9 * time.Second}) {
				u.Do("slow", deaf)
			}
		}}
		zero := func(ramp time.Duration) float64 {
			res := run(t, loadtest.Scenario{Workload: w, Drain: 40 * time.Second, SelfCheck: loadtest.SelfCheck{MaxDrift: -1},
				Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 10, Hold: 10 * time.Second}, {Level: 10, Ramp: ramp, Hold: 10 * time.Second, FromZero: true}}}})
			for _, p := range res.Timeline.Phases {
				if p.Name == "zero" {
					return p.To - p.From
				}
			}
			t.Fatal("no return to zero")
			return 0
		}
		assert.InDelta(t, 5, zero(35*time.Second), 0.5, "40 s of drain, 35 of them in the ramp")
		assert.InDelta(t, 30, zero(time.Second), 8, "a short ramp: the requests' own (up to 30 s), within the 39 left")
	})
}

// Before every probe from zero the system is restored (Scenario.Reset): a
// probe that killed the target must not leave the next one a dead target,
// whose failure would pass for a knee. A restore that fails stops the run,
// keeping what was measured.
func TestResetBeforeEveryProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls []int
		s := kneeScenario(730, loadtest.Knee{Start: 100, Factor: 1.5, Max: 10_000, Hold: 10 * time.Second})
		s.Reset = func(context.Context) ([]string, error) {
			calls = append(calls, len(calls))
			return []string{"relay"}, nil
		}
		res := run(t, s)
		assert.Len(t, calls, len(res.Steps)-1, "before every probe but the first")

		s.Reset = func(context.Context) ([]string, error) { return nil, errors.New("relay did not start") }
		res, err := loadtest.Run(context.Background(), s)
		require.ErrorContains(t, err, "restoring the system before step 2: relay did not start")
		require.NotNil(t, res)
		assert.Len(t, res.Steps, 1, "the first probe is kept")
		assert.True(t, res.Partial)
		assert.Equal(t, result.Incomplete, res.Verdict)
		assert.Contains(t, res.Conclusion, "relay did not start")
	})
}

// A probe from zero starts its users anew even when the drain leaves no
// time to wait for requests (Drain shorter than the ramp): the users of
// the probe before are stopped first. Once they were kept, connected and
// in phase, when the ramp to the next level followed the stop at once.
func TestFromZeroStartsUsersAnew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		starts := 0
		w := &loadtest.Users{Kinds: []string{"get"}, Behavior: func(u *loadtest.User) {
			mu.Lock()
			starts++
			mu.Unlock()
			for u.Think(dist.Exponential[time.Duration]{Mean: time.Second}) {
				u.Do("get", sleeper(10*time.Millisecond))
			}
		}}
		run(t, loadtest.Scenario{Workload: w, Drain: 5 * time.Second,
			Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 10, Hold: 10 * time.Second}, {Level: 8, Ramp: 10 * time.Second, Hold: 10 * time.Second, FromZero: true}}}})
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, 18, starts, "10 users, then 8 new ones")
	})
}

// TestAnalyzeFindings: Scenario.Analyze's findings reach the result and
// its report; a failed analysis is a finding naming the error.
func TestAnalyzeFindings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := kneeScenario(100_000, loadtest.Knee{Start: 100, Factor: 2, Max: 200, Hold: 5 * time.Second})
		s.SelfCheck.MaxCPU = -1
		s.Analyze = func(res *loadtest.Result) ([]result.Finding, error) {
			var xs, ys []float64
			for _, st := range res.Steps {
				xs = append(xs, st.Step.Level)
				ys = append(ys, 1000+st.Step.Level*2048)
			}
			l, err := result.FitLine(xs, ys)
			return []result.Finding{result.LineFinding("memory per user", "bytes", l)}, err
		}
		res, err := loadtest.Run(t.Context(), s)
		require.NoError(t, err)
		require.Len(t, res.Findings, 1)
		assert.InDelta(t, 2048, res.Findings[0].Value, 1e-6)
		assert.Contains(t, res.Markdown(), "## Findings\n\n- memory per user: 2KiB (no interval: too few points) — slope of a least-squares line over 2 points")

		s.Plan = loadtest.Knee{Start: 100, Factor: 2, Max: 100, Hold: 5 * time.Second}
		res, err = loadtest.Run(t.Context(), s)
		require.NoError(t, err)
		require.Len(t, res.Findings, 2)
		assert.Equal(t, "analysis failed", res.Findings[1].Name)
		assert.Contains(t, res.Markdown(), "- analysis failed: loadtest: FitLine needs at least two points")
	})
}
