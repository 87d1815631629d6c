package loadtest_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// sleeper is a request function that takes d of (virtual) time.
func sleeper(d time.Duration) func(context.Context) loadtest.Response {
	return func(ctx context.Context) loadtest.Response {
		select {
		case <-time.After(d):
			return loadtest.Response{Outcome: loadtest.OK, Bytes: 100}
		case <-ctx.Done():
			return loadtest.Response{Outcome: loadtest.Timeout, Err: ctx.Err()}
		}
	}
}

// run runs s. The host's contention is judged in the host's tests; here,
// where tests judge the core's mechanics, a shared runner's CPU steal must
// not turn an expected breach into "invalid", so a scenario that leaves
// the host's bounds to their defaults is run without them.
func run(t *testing.T, s loadtest.Scenario) *loadtest.Result {
	t.Helper()
	if s.SelfCheck.MaxHostSteal == 0 {
		s.SelfCheck.MaxHostSteal = -1
	}
	if s.SelfCheck.MaxHostOther == 0 {
		s.SelfCheck.MaxHostOther = -1
	}
	res, err := loadtest.Run(t.Context(), s)
	require.NoError(t, err)
	require.NotNil(t, res)
	return res
}

func TestArrivalsConstantRateInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(5 * time.Millisecond)}}},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 200, Ramp: time.Second, Hold: 10 * time.Second}}},
			Checks:   []loadtest.Check{loadtest.LatencyBelow("get", 99, 10*time.Millisecond), loadtest.NoDropped()},
		})
		require.Len(t, res.Steps, 1)
		s := res.Steps[0]
		assert.Equal(t, result.Pass, s.Verdict, s.Violations)
		get := s.Kind("get")
		// 200/s for 10 s, give or take the arrival at each edge.
		assert.InDelta(t, 2000, get.Total(), 1)
		assert.InDelta(t, 200, s.Offered, 0.2)
		assert.InDelta(t, 200, s.Throughput, 0.2)
		assert.Equal(t, 5*time.Millisecond, get.Latency.P50.Round(time.Millisecond))
		assert.Equal(t, int64(200_000), get.Bytes)
		assert.Equal(t, 200.0, res.Capacity)
		assert.Equal(t, result.Pass, res.Verdict)
	})
}

func TestArrivalsPoissonRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Seed:     3,
			Workload: &loadtest.Arrivals{Poisson: true, Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 500, Hold: 20 * time.Second}}},
		})
		// Poisson(10,000): sd 100; allow 4 sd.
		assert.InDelta(t, 10_000, res.Steps[0].Kind("get").Total(), 400)
	})
}

func TestArrivalsMixFollowsWeights(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{
				{Name: "read", Weight: 9, Do: sleeper(time.Millisecond)},
				{Name: "write", Weight: 1, Do: sleeper(2 * time.Millisecond)},
			}},
			Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 1000, Hold: 10 * time.Second}}},
		})
		s := res.Steps[0]
		// Binomial(10,000, 0.1): sd 30; allow 5 sd.
		assert.InDelta(t, 1000, s.Kind("write").Total(), 150)
		assert.InDelta(t, 10_000, s.Kind("read").Total()+s.Kind("write").Total(), 1)
	})
}

// A ramp measures nothing: only the hold counts.
func TestRampIsNotMeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: func(ctx context.Context) loadtest.Response {
				calls.Add(1)
				return loadtest.Response{Outcome: loadtest.OK}
			}}}},
			Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Ramp: 10 * time.Second, Hold: 5 * time.Second}}},
		})
		// The ramp 0→100/s over 10 s sends ~500, the hold 500.
		assert.InDelta(t, 1000, calls.Load(), 2)
		assert.InDelta(t, 500, res.Steps[0].Kind("get").Total(), 1)
	})
}

// When the target holds every request and the concurrency bound is reached,
// arrivals are dropped and counted, not skipped or delayed.
func TestArrivalsDroppedWhenNoWorkerFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{MaxInFlight: 5, MaxWait: 50 * time.Millisecond,
				Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Second)}}},
			Plan:   loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 10 * time.Second}}},
			Checks: []loadtest.Check{loadtest.NoDropped()},
			Drain:  2 * time.Second,
		})
		s := res.Steps[0]
		get := s.Kind("get")
		// 5 workers each finish one request a second: ~50 answered of 1,000.
		assert.InDelta(t, 50, get.Outcomes[loadtest.OK], 6)
		assert.InDelta(t, 950, get.Outcomes[loadtest.Dropped], 6)
		assert.Equal(t, get.Outcomes[loadtest.Dropped], s.Self.Dropped)
		assert.Equal(t, result.Fail, s.Verdict)
		require.Error(t, res.Err())
		assert.Contains(t, res.Err().Error(), "dropped")
		assert.Equal(t, 0.0, res.Capacity)
	})
}

// Latency runs from the intended send time: a target that stalls every
// request for 1 s once every 5 s shows in p99 while the median stays low.
func TestCoordinatedOmissionInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		stall := func(ctx context.Context) loadtest.Response {
			// The server is stalled during the first second of every 5 s:
			// a request answers when the stall ends.
			mu.Lock()
			phase := time.Since(start) % (5 * time.Second)
			mu.Unlock()
			d := time.Millisecond
			if phase < time.Second {
				d += time.Second - phase
			}
			return sleeper(d)(ctx)
		}
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: stall}}},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 20 * time.Second}}},
		})
		get := res.Steps[0].Kind("get")
		assert.Less(t, get.Latency.P50, 5*time.Millisecond)
		assert.Greater(t, get.Latency.P99, 800*time.Millisecond)
	})
}

func TestLadderStopsAtFirstFailureAndCapacityIsTheStepBelow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A synthetic target whose latency grows with the load: 1 ms per
		// 10 arrivals/s of the current level.
		var level atomic.Int64
		slow := func(ctx context.Context) loadtest.Response {
			return sleeper(time.Duration(level.Load()/10) * time.Millisecond)(ctx)
		}
		steps := []loadtest.Step{{Level: 50, Hold: 5 * time.Second}, {Level: 100, Hold: 5 * time.Second}, {Level: 300, Hold: 5 * time.Second}, {Level: 400, Hold: 5 * time.Second}}
		var lines []string
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: func(ctx context.Context) loadtest.Response {
				return slow(ctx)
			}}}},
			Plan:   levelSetter{loadtest.Ladder{Steps: steps}, &level},
			Checks: []loadtest.Check{loadtest.LatencyBelow("get", 95, 20*time.Millisecond)},
			Logf:   func(f string, a ...any) { lines = append(lines, f) },
		})
		require.Len(t, res.Steps, 3, "the ladder stops after the failing step")
		assert.Equal(t, []result.Verdict{result.Pass, result.Pass, result.Fail}, verdicts(res))
		assert.Equal(t, 100.0, res.Capacity)
		assert.Equal(t, 300.0, res.FirstFailure)
		assert.Equal(t, result.Fail, res.Verdict)
		err := res.Err()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "step 3 (level 300): p95 of get < 20ms: measured 30.0")
		assert.NotEmpty(t, lines, "progress was reported")
	})
}

// levelSetter tells the synthetic target the level of the step about to run.
type levelSetter struct {
	loadtest.Ladder
	level *atomic.Int64
}

func (l levelSetter) Next(done []*loadtest.StepResult) (loadtest.Step, bool) {
	s, ok := l.Ladder.Next(done)
	l.level.Store(int64(s.Level))
	return s, ok
}

func verdicts(res *loadtest.Result) []result.Verdict {
	var v []result.Verdict
	for _, s := range res.Steps {
		v = append(v, s.Verdict)
	}
	return v
}

func TestCancelKeepsWhatWasMeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 7*time.Second)
		defer cancel()
		res, err := loadtest.Run(ctx, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:     loadtest.Levels(time.Second, 4*time.Second, 10, 20),
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotNil(t, res)
		assert.True(t, res.Partial)
		assert.Equal(t, result.Incomplete, res.Verdict)
		require.Len(t, res.Steps, 2)
		assert.Equal(t, result.Pass, res.Steps[0].Verdict)
		assert.Equal(t, result.Incomplete, res.Steps[1].Verdict)
		// Step 2 held for 1 s of its 4 at 20/s.
		assert.InDelta(t, 20, res.Steps[1].Kind("get").Total(), 2)
		assert.Equal(t, 10.0, res.Capacity)
	})
}

func TestValidationNamesTheFieldAndFix(t *testing.T) {
	do := sleeper(time.Millisecond)
	mix := []loadtest.Kind{{Name: "get", Weight: 1, Do: do}}
	good := loadtest.Ladder{Steps: []loadtest.Step{{Level: 1, Hold: time.Second}}}
	for _, tc := range []struct {
		name string
		s    loadtest.Scenario
		want string
	}{
		// No workload at all.
		{"no workload", loadtest.Scenario{Plan: good}, "Workload is nil"},
		// An empty ladder.
		{"empty ladder", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: loadtest.Ladder{}}, "no steps"},
		// A negative rate.
		{"negative level", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: -5, Hold: time.Second}}}}, "Steps[0].Level is -5"},
		// Zero hold.
		{"zero hold", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 5}}}}, "Steps[0].Hold is 0s"},
		// A negative ramp.
		{"negative ramp", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 5, Ramp: -time.Second, Hold: time.Second}}}}, "Steps[0].Ramp is -1s"},
		// A leak rate that is negative, or set on a step that is no soak.
		{"negative leak rate", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 5, Hold: time.Minute, Soak: true, LeakMatters: -1}}}}, "Steps[0].LeakMatters is -1; give the slowest memory growth that is a leak, in bytes per hour"},
		{"leak rate without a soak", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 5, Hold: time.Minute, LeakMatters: 1 << 30}}}}, "Steps[0].LeakMatters is set on a step that is no soak; set Soak too"},
		// An SLO on a kind the workload never issues.
		{"unknown kind", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Checks: []loadtest.Check{loadtest.LatencyBelow("post", 95, time.Second)}}, `never issues kind "post"`},
		// A quantile outside (0, 100].
		{"quantile", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Checks: []loadtest.Check{loadtest.LatencyBelow("get", 0.95*1000, time.Second)}}, "outside (0, 100]"},
		// A percentile written as a fraction: p0.95 is nearly the fastest
		// answer, and a PocketBase at 206 ms passed "p95 < 100 ms".
		{"fraction", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Checks: []loadtest.Check{loadtest.LatencyBelow("get", 0.95, time.Second)}}, "percentile 0.95 reads as a fraction, but percentiles here run 0–100 (p0.95 is nearly the fastest answer); write 95 for p95"},
		// A rate bound above 1.
		{"rate bound", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Checks: []loadtest.Check{loadtest.RateBelow("get", loadtest.HTTP5xx, 5)}}, "outside [0, 1]"},
		{"rate alpha", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Checks: []loadtest.Check{loadtest.Rate{Kind: "get", Outcome: loadtest.HTTP5xx, Max: 0.1, Alpha: 5}}}, "Alpha 5 is outside [0, 0.5]"},
		{"rate alpha without a bar", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Checks: []loadtest.Check{loadtest.Rate{Kind: "get", Outcome: loadtest.HTTP5xx, Alpha: 0.01}}}, "Alpha needs a Max strictly between 0 and 1"},
		// 1 written for 1%: a check that only a total outage breaches.
		{"share of one", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Checks: []loadtest.Check{loadtest.FailuresBelow("get", 1)}}, "bound 1 is a share of 100%, which only a step where every request fails breaches; write 0.01 for 1%"},
		// A kind with no request function and no weight.
		{"bad kind", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "x"}}}, Plan: good}, "Do is nil"},
		// Users with no behaviour.
		{"no behaviour", loadtest.Scenario{Workload: &loadtest.Users{Kinds: []string{"get"}}, Plan: good}, "Behavior is nil"},
		// A negative duration knob.
		{"negative drain", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Drain: -time.Second}, "Drain is -1s"},
		// A profile source without a URL.
		{"profile source", loadtest.Scenario{Workload: &loadtest.Arrivals{Mix: mix}, Plan: good, Profiles: []loadtest.ProfileSource{{Component: "relay", URL: "127.0.0.1:8080"}}}, "Profiles[0]"},
	} {
		t.Run("case="+strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			res, err := loadtest.Run(context.Background(), tc.s)
			require.Error(t, err)
			assert.Nil(t, res, "nothing runs")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestCustomAndRateChecks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		flaky := func(ctx context.Context) loadtest.Response {
			if n.Add(1)%10 == 0 { // every 10th request fails
				return loadtest.Response{Outcome: loadtest.HTTP5xx, Err: errors.New("503 Service Unavailable")}
			}
			return loadtest.Response{Outcome: loadtest.OK}
		}
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: flaky}}},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 5 * time.Second}}},
			Checks: []loadtest.Check{
				loadtest.RateBelow("get", loadtest.HTTP5xx, 0.2), // holds: 10%
				loadtest.RateBelow("", loadtest.HTTP5xx, 0.05),   // violated
				loadtest.Custom("at least 1000 ok", func(s *loadtest.StepResult) error { // violated: ~450
					if ok := s.Count(loadtest.OK); ok < 1000 {
						return errors.New("too few")
					}
					return nil
				}),
			},
		})
		s := res.Steps[0]
		require.Len(t, s.Violations, 2, s.Violations)
		assert.Contains(t, s.Violations[0], "http_5xx rate of all requests < 5%: measured ")
		assert.Contains(t, s.Violations[1], "at least 1000 ok: too few")
		assert.Equal(t, []string{"http_5xx: 503 Service Unavailable"}, s.Kind("get").Errors)
		assert.InDelta(t, 0.1, s.Kind("get").Rate(loadtest.HTTP5xx), 0.01)
	})
}

// TestArrivalsGoToTheWorkerIdleTheShortestTime: a burst of slow answers
// leaves a hundred workers, and the quick arrivals once they are all idle
// again, one at a time, are all served by the worker that became idle last — each
// worker has its own random source (Rand), which names it — not by each
// idle worker in turn, whose stack and data the cache no longer holds.
func TestArrivalsGoToTheWorkerIdleTheShortestTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var calls int
		after := map[*rand.Rand]bool{} // the workers of the arrivals after the burst
		do := func(ctx context.Context) loadtest.Response {
			mu.Lock()
			calls++
			n := calls
			if n > 300 { // from 1.5 s, the burst's workers all idle again
				after[loadtest.Rand(ctx)] = true
			}
			mu.Unlock()
			if n <= 100 { // the burst: each holds a worker for 600 ms
				time.Sleep(600 * time.Millisecond)
			}
			return loadtest.Response{Outcome: loadtest.OK}
		}
		run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: do}}},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 200, Hold: 3 * time.Second}}},
		})
		mu.Lock()
		defer mu.Unlock()
		require.Greater(t, calls, 400)
		assert.Len(t, after, 1, "%d workers served the %d quick arrivals one at a time", len(after), calls-300)
	})
}
