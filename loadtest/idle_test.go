package loadtest_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// restingSampler reports a service's memory: 100 MiB at rest, 100 MiB +
// 1 MiB per request in flight under load.
type restingSampler struct{ inFlight func() int64 }

func (s restingSampler) Sample(context.Context, time.Time) ([]loadtest.Measurement, error) {
	return []loadtest.Measurement{
		{Component: "svc", Metric: "memory", Unit: "bytes", Value: float64(100<<20 + s.inFlight()<<20)},
		{Component: "svc", Metric: "cpu", Unit: "cores", Value: 0.01},
	}, nil
}

// restDownCheck is an IdleCheck that reports the system down when down says so.
type restDownCheck struct{ down func() bool }

func (restDownCheck) String() string          { return "svc up" }
func (restDownCheck) Validate([]string) error { return nil }
func (restDownCheck) JudgesIdle() bool        { return true }
func (c restDownCheck) Evaluate(*loadtest.StepResult) error {
	if c.down() {
		return errors.Join(errors.New("svc stopped"), loadtest.ErrSystemDown)
	}
	return nil
}

// TestIdleRow: a ladder that begins at level 0 holds the stack at rest —
// no request is sent — and measures its components there; checks of
// requests do not judge it (a p95 of nothing is no breach), checks of the
// stack do; it is no level of capacity, on either workload.
func TestIdleRow(t *testing.T) {
	for _, users := range []bool{false, true} {
		name := "arrivals"
		if users {
			name = "users"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var sent, inFlight atomic.Int64
				do := func(ctx context.Context) loadtest.Response {
					sent.Add(1)
					inFlight.Add(1)
					defer inFlight.Add(-1)
					return sleeper(5 * time.Millisecond)(ctx)
				}
				var w loadtest.Workload = &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: do}}}
				if users {
					w = &loadtest.Users{Behavior: func(u *loadtest.User) {
						for u.Sleep(100 * time.Millisecond) {
							u.Do("get", do)
						}
					}, Kinds: []string{"get"}}
				}
				var sentBefore int64
				res := run(t, loadtest.Scenario{
					Workload:    w,
					Plan:        loadtest.Levels(time.Second, 10*time.Second, 0, 20),
					SampleEvery: time.Second,
					Samplers:    []loadtest.Sampler{restingSampler{inFlight.Load}},
					Checks: []loadtest.Check{
						loadtest.LatencyBelow("get", 95, time.Second),
						loadtest.FailuresBelow("get", 0.01),
					},
					OnStep: func(r *loadtest.Result) {
						if len(r.Steps) == 1 {
							sentBefore = sent.Load()
						}
					},
				})
				require.Len(t, res.Steps, 2)
				idle := res.Steps[0]
				assert.True(t, idle.Idle())
				assert.Zero(t, sentBefore, "no request before the first loaded step")
				assert.Zero(t, idle.Achieved)
				assert.Equal(t, result.Pass, idle.Verdict, "%v %v", idle.Violations, idle.InvalidReasons())
				m := idle.Resource("svc", "memory")
				require.NotNil(t, m, "the idle hold measures the stack")
				assert.Equal(t, float64(100<<20), m.Max)
				assert.Equal(t, result.Pass, res.Steps[1].Verdict)
				assert.Positive(t, res.Steps[1].Achieved)
				assert.Equal(t, 20.0, res.Capacity, "the loaded step is the capacity, not the idle row")
				assert.Equal(t, result.Pass, res.Verdict)

				md := res.Markdown()
				assert.Contains(t, md, "| idle | 0.0 | – | – | – | 0% |", "the idle row in the step table")
			})
		})
	}
}

// TestIdleRowJudgedByIdleChecksOnly: a stack that stops at rest fails the
// idle row (and the run); a check of requests does not fail an idle row,
// but fails the same ladder's first loaded step.
func TestIdleRowJudgedByIdleChecksOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := false
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:     loadtest.Levels(0, 5*time.Second, 0, 20),
			Checks:   []loadtest.Check{restDownCheck{func() bool { return down }}, loadtest.LatencyBelow("get", 50, time.Microsecond)},
		})
		require.Len(t, res.Steps, 2)
		assert.Equal(t, result.Pass, res.Steps[0].Verdict, "a p50 bound of 1µs does not judge the idle row: %v", res.Steps[0].Violations)
		assert.Equal(t, result.Fail, res.Steps[1].Verdict, "it judges the loaded step")
		assert.Zero(t, res.Capacity)
		assert.Equal(t, 20.0, res.FirstFailure)

		down = true
		res = run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:     loadtest.Levels(0, 5*time.Second, 0, 20),
			Checks:   []loadtest.Check{restDownCheck{func() bool { return down }}},
		})
		require.Len(t, res.Steps, 1, "the ladder stops at the failed idle row")
		assert.Equal(t, result.Fail, res.Steps[0].Verdict)
		assert.Equal(t, result.Fail, res.Verdict, "a stack down at rest fails the run")
		require.Error(t, res.Err())
		assert.Contains(t, res.Err().Error(), "svc stopped")
	})
}

func TestIdleLevelOnlyInALadder(t *testing.T) {
	assert.NoError(t, loadtest.Levels(time.Second, time.Second, 0, 10).Validate())
	err := loadtest.Levels(time.Second, time.Second, -1, 10).Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "or 0 for the idle row")
	k := loadtest.Knee{Start: 0, Max: 100, Factor: 2, Precision: 0.1, MaxProbes: 3, Trials: 1, Granularity: 1, Ramp: time.Second, Hold: time.Second}
	err = k.Validate()
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "give a positive load level") && !strings.Contains(err.Error(), "idle row"), "a knee has no idle probe: %v", err)
}
