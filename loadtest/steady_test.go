package loadtest_test

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// burstyUsers is a gateway-like population: calls in bursts a second
// apart, then a quiet spell of about a minute. first says how each user
// draws its first pause: in phase (a plain draw, as the gateway once did)
// or at a random point of its cycle (Think).
func burstyUsers(inPhase bool, latency func(u *loadtest.User) time.Duration) *loadtest.Users {
	bursts, err := dist.CalibratedBursts(time.Second, 3*time.Second, 5, 15*time.Second)
	if err != nil {
		panic(err)
	}
	return &loadtest.Users{Kinds: []string{"call"}, Behavior: func(u *loadtest.User) {
		pause := func() bool { return u.Think(bursts) }
		if inPhase {
			pause = func() bool { return u.Sleep(bursts.Sample(u.Rand)) }
		}
		for pause() {
			u.Do("call", sleeper(latency(u)))
		}
	}}
}

func fast(*loadtest.User) time.Duration { return 20 * time.Millisecond }

// steadyRun runs one step of n users, ramped over 5 s and held 60 s.
func steadyRun(t *testing.T, seed uint64, n float64, w *loadtest.Users) *loadtest.StepResult {
	t.Helper()
	res := run(t, loadtest.Scenario{
		Seed: seed, Workload: w, SeriesEvery: -1,
		Plan:      loadtest.Levels(5*time.Second, 60*time.Second, n),
		SelfCheck: loadtest.SelfCheck{MaxCPU: -1, MaxScheduleLag: -1},
	})
	require.Len(t, res.Steps, 1)
	return res.Steps[0]
}

// Users started in phase — each inside a burst at once — make a surge
// that decays through the hold: the step is invalid, naming the drift and
// the fix, never a pass. Started at random points of their cycle (Think),
// the same users are in steady state, and no step of 30 seeds is voided.
func TestDriftingHoldIsInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := steadyRun(t, 1, 200, burstyUsers(true, fast))
		require.Equal(t, result.Invalid, s.Verdict, "%v", s.Self.Reasons)
		why := strings.Join(s.Self.Reasons, "\n")
		assert.Contains(t, why, "not in steady state: offered load fell")
		assert.Contains(t, why, "User.Think")
		all := s.Self.Trends[0]
		assert.Equal(t, loadtest.AllRequests, all.Kind)
		assert.Less(t, all.Change(), -0.25)
		assert.Less(t, all.Z(), -3.5)
	})
	var worst, first, last float64
	const seeds = 30
	for seed := uint64(1); seed <= seeds; seed++ {
		synctest.Test(t, func(t *testing.T) {
			s := steadyRun(t, seed, 200, burstyUsers(false, fast))
			assert.Equal(t, result.Pass, s.Verdict, "seed %d: %v", seed, s.Self.Reasons)
			all := s.Self.Trends[0]
			worst = math.Max(worst, math.Abs(all.Z()))
			first += float64(all.First) / seeds
			last += float64(all.Last) / seeds
		})
	}
	t.Logf("stationary users, %d seeds: calls in the first and last thirds %.0f and %.0f; largest |z| of the whole load %.2f", seeds, first, last, worst)
	// 200 users calling every 15 s: about 267 calls a third.
	assert.InEpsilon(t, 200.0/15*20, first, 0.1)
	assert.InEpsilon(t, 200.0/15*20, last, 0.1)
}

// A target at a resource limit changes what its users do: the same
// phase-locked fall that voids a step with a target at ease is, beside a
// target near its memory limit, its users' reaction — its checks judge the
// step, which is not voided (the main job's 2,813-user probe: relay memory
// 99% of its limit, once "invalid: not in steady state").
func TestStrainedTargetIsNoDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Seed: 1, Workload: burstyUsers(true, fast), SeriesEvery: -1,
			Plan:      loadtest.Levels(5*time.Second, 60*time.Second, 200),
			SelfCheck: loadtest.SelfCheck{MaxCPU: -1, MaxScheduleLag: -1},
			Samplers: []loadtest.Sampler{fakeSampler{loadtest.Measurement{Component: "relay", Metric: "memory", Unit: "bytes",
				Value: 63 << 20, Limit: 64 << 20}}},
		})
		s := res.Steps[0]
		assert.Less(t, s.Self.Trends[0].Change(), -0.25, "the same fall")
		assert.NotEqual(t, result.Invalid, s.Verdict, "%v", s.Self.Reasons)
		assert.NotEmpty(t, s.Saturated)
	})
}

// A target that slows down slows its users in a closed model: they wait
// for answers, and begin fewer requests. That drift is the target's doing
// — its checks judge it — so it does not void the step: the users'
// waiting grew with the fall. (Without that, 1000 users' fall is far
// beyond chance.)
func TestSlowingTargetIsNoDrift(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		// The answer takes 20 ms in the first third and 20–40 s in the
		// last (5 s ramp, then 60 s of hold).
		slowing := func(*loadtest.User) time.Duration {
			at := time.Since(start) - 5*time.Second
			return 20*time.Millisecond + time.Duration(math.Max(0, at.Seconds()-20)*float64(time.Second))
		}
		s := steadyRun(t, 1, 1000, burstyUsers(false, slowing))
		all := s.Self.Trends[0]
		assert.Less(t, all.LastRate(), 0.7*all.FirstRate(), "the users began fewer calls: %v", all)
		assert.Less(t, all.ExposureLast, 0.9*all.ExposureFirst, "they were waiting: %v", all)
		assert.Less(t, all.Z(), -3.5)
		assert.NotEqual(t, result.Invalid, s.Verdict, "%v", s.Self.Reasons)
	})
}

// A target that starts failing changes what its users do without making
// them wait: here, from the middle of the hold, each backs off 20 s after
// a failed call, and the calls begun fall by half. That is the target's
// doing — its checks judge it, and the step fails — not a workload out
// of steady state. The same fall with every call answered (users that
// pause anyway) is a drift, and voids the step.
func TestFailingTargetIsNoDrift(t *testing.T) {
	for _, failing := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			from := time.Now().Add(5*time.Second + 25*time.Second) // the middle of the hold
			w := &loadtest.Users{Kinds: []string{"call"}, Behavior: func(u *loadtest.User) {
				for u.Think(dist.Exponential[time.Duration]{Mean: 5 * time.Second}) {
					late := time.Now().After(from)
					u.Do("call", func(context.Context) loadtest.Response {
						time.Sleep(10 * time.Millisecond)
						if late && failing {
							return loadtest.Response{Outcome: loadtest.HTTP5xx}
						}
						return loadtest.Response{Outcome: loadtest.OK}
					})
					if late && !u.Sleep(20*time.Second) {
						return
					}
				}
			}}
			res := run(t, loadtest.Scenario{
				Seed: 1, Workload: w, SeriesEvery: -1,
				Plan:      loadtest.Levels(5*time.Second, 60*time.Second, 300),
				Checks:    []loadtest.Check{loadtest.FailuresBelow("call", 0.01)},
				SelfCheck: loadtest.SelfCheck{MaxCPU: -1, MaxScheduleLag: -1},
			})
			s := res.Steps[0]
			all := s.Self.Trends[0]
			assert.Less(t, all.Change(), -0.4, "the users began fewer calls: %+v", all)
			assert.Less(t, all.Z(), -3.5)
			assert.InDelta(t, all.ExposureFirst, all.ExposureLast, 0.05*all.ExposureFirst, "nobody waited longer")
			if failing {
				assert.Equal(t, result.Fail, s.Verdict, "%v", s.InvalidReasons())
				assert.Empty(t, s.InvalidReasons())
			} else {
				assert.Equal(t, result.Invalid, s.Verdict)
				assert.Contains(t, strings.Join(s.InvalidReasons(), "\n"), "not in steady state: offered load fell")
			}
		})
	}
}

// The whole load steady, its mix not: users that switch from one kind to
// another halfway through the hold void the step, naming the kind.
func TestKindMixDriftIsInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		switchAt := time.Now().Add(5*time.Second + 30*time.Second)
		w := &loadtest.Users{Kinds: []string{"read", "write"}, Behavior: func(u *loadtest.User) {
			for u.Think(dist.Exponential[time.Duration]{Mean: 5 * time.Second}) {
				kind := "read"
				if time.Now().After(switchAt) && u.Rand.IntN(2) == 0 {
					kind = "write"
				}
				u.Do(kind, sleeper(10*time.Millisecond))
			}
		}}
		s := steadyRun(t, 1, 200, w)
		require.Equal(t, result.Invalid, s.Verdict)
		assert.Contains(t, strings.Join(s.Self.Reasons, "\n"), "read requests (the kind mix) fell")
		assert.InDelta(t, 0, s.Self.Trends[0].Change(), 0.15, "the whole load is steady")
	})
}

// The open model's arrivals are steady by construction: their trend is
// tested as independent requests, and holds.
func TestArrivalsAreSteady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(5 * time.Millisecond)}}},
			Plan:     loadtest.Levels(time.Second, 30*time.Second, 100),
		})
		s := res.Steps[0]
		assert.Equal(t, result.Pass, s.Verdict, "%v", s.Self.Reasons)
		require.NotEmpty(t, s.Self.Trends)
		assert.InDelta(t, 1000, s.Self.Trends[0].First, 20)
		assert.Zero(t, s.Self.Trends[0].ExposureFirst, "requests of no user")
	})
}

// The trend's arithmetic, by hand.
func TestTrendArithmetic(t *testing.T) {
	for _, tc := range []struct {
		name         string
		tr           result.Trend
		change, z    float64
		firstPerSec  float64
		lastPerSecOK float64
	}{
		// 100 independent requests against 64, a third of 10 s: −36%,
		// z = (64−100)/√164.
		{"alone", result.Trend{Third: 10 * time.Second, First: 100, Last: 64, SumFirst2: 100, SumLast2: 64}, -0.36, -36 / math.Sqrt(164), 10, 6.4},
		// Users that waited half the last third: the same pace.
		{"exposure", result.Trend{Third: 10 * time.Second, First: 100, Last: 50, ExposureFirst: 100, ExposureLast: 50,
			SumFirst2: 100, SumLast2: 50}, 0, 0, 10, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.change, tc.tr.Change(), 1e-9)
			assert.InDelta(t, tc.z, tc.tr.Z(), 1e-9)
			assert.InDelta(t, tc.firstPerSec, tc.tr.FirstRate(), 1e-9)
			assert.InDelta(t, tc.lastPerSecOK, tc.tr.LastRate(), 1e-9)
		})
	}
	sum := result.Trend{First: 1, Last: 2, SumFirst2: 1, SumLast2: 4, SumCross: 2}.Add(result.Trend{First: 3, Last: 1, SumFirst2: 9, SumLast2: 1, SumCross: 3})
	assert.Equal(t, result.Trend{First: 4, Last: 3, SumFirst2: 10, SumLast2: 5, SumCross: 5}, sum)
}

// A drift bound that is no fraction is refused before the run.
func TestMaxDriftValidated(t *testing.T) {
	_, err := loadtest.Run(context.Background(), loadtest.Scenario{
		Workload:  burstyUsers(false, fast),
		Plan:      loadtest.Levels(0, time.Second, 1),
		SelfCheck: loadtest.SelfCheck{MaxDrift: math.NaN()},
	})
	assert.ErrorContains(t, err, "SelfCheck bound is NaN")
}

// connectingUsers connect (init, then list, one after the other) to a
// target that serves one request at a time in 10 ms, then call it every
// 10 s on average: at 200 users ramped in a second, the connections queue
// for about four seconds past the ramp.
func connectingUsers() *loadtest.Users {
	one := make(chan struct{}, 1)
	serve := func(ctx context.Context) loadtest.Response {
		select {
		case one <- struct{}{}:
		case <-ctx.Done():
			return loadtest.Response{Outcome: loadtest.Timeout, Err: ctx.Err()}
		}
		defer func() { <-one }()
		return sleeper(10 * time.Millisecond)(ctx)
	}
	think := dist.Exponential[time.Duration]{Mean: 10 * time.Second}
	return &loadtest.Users{Kinds: []string{"init", "list", "call"}, Behavior: func(u *loadtest.User) {
		if u.Do("init", serve).Outcome != loadtest.OK || u.Do("list", serve).Outcome != loadtest.OK {
			return
		}
		for u.Think(think) {
			u.Do("call", serve)
		}
	}}
}

// The start-up work of a ramp's users — connections that queue at a slow
// target — is the ramp's: the hold begins once every user is ready, and
// measures only the level's steady load. Its wait is bounded by Drain;
// past it, the hold begins anyway and says how many users were still
// starting.
func TestHoldWaitsForUsersToStart(t *testing.T) {
	step := func(t *testing.T, drain time.Duration) *loadtest.StepResult {
		res := run(t, loadtest.Scenario{
			Seed: 1, Workload: connectingUsers(), SeriesEvery: -1, Drain: drain,
			Plan:      loadtest.Levels(time.Second, 30*time.Second, 200),
			SelfCheck: loadtest.SelfCheck{MaxCPU: -1, MaxScheduleLag: -1},
		})
		require.Len(t, res.Steps, 1)
		return res.Steps[0]
	}
	t.Run("settled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := step(t, 30*time.Second)
			assert.Equal(t, result.Pass, s.Verdict, "%v %v", s.Violations, s.Self.Reasons)
			assert.Zero(t, s.Kind("init").Total()+s.Kind("list").Total(), "no connection is the hold's")
			assert.Greater(t, s.Settle, 2*time.Second, "400 requests of 10 ms, one at a time, outlast a ramp of a second")
			assert.Less(t, s.Settle, 6*time.Second)
			assert.Zero(t, s.Unsettled)
			assert.InDelta(t, 20, s.Offered, 4, "200 users calling every 10 s")
		})
	})
	t.Run("bounded", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := step(t, 500*time.Millisecond)
			assert.Equal(t, 500*time.Millisecond, s.Settle.Round(100*time.Millisecond))
			assert.Greater(t, s.Unsettled, int64(50), "most users still connecting half a second after the ramp")
			assert.Positive(t, s.Kind("list").Total(), "their connections fall in the hold")
		})
	})
}
