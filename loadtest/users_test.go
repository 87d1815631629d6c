package loadtest_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
)

func TestUsersRampSpreadsStartsEvenly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		var mu sync.Mutex
		starts := map[int]time.Duration{}
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Users{Kinds: []string{"get"}, Behavior: func(u *loadtest.User) {
				mu.Lock()
				starts[u.ID] = time.Since(t0)
				mu.Unlock()
				for u.Sleep(time.Second) {
					u.Do("get", sleeper(10*time.Millisecond))
				}
			}},
			Plan: loadtest.Ladder{Steps: []loadtest.Step{
				{Level: 10, Ramp: 10 * time.Second, Hold: 10 * time.Second},
				{Level: 20, Ramp: 5 * time.Second, Hold: 10 * time.Second},
			}},
		})
		require.Len(t, starts, 20)
		for id := range 10 { // first ramp: one user a second
			assert.Equal(t, time.Duration(id)*time.Second, starts[id], "user %d", id)
		}
		for id := 10; id < 20; id++ { // second ramp starts at 20 s: one every 0.5 s
			assert.Equal(t, 20*time.Second+time.Duration(id-10)*500*time.Millisecond, starts[id], "user %d", id)
		}
		// 10 users each calling about once a second (1 s think + 10 ms).
		assert.InDelta(t, 99, res.Steps[0].Kind("get").Total(), 3)
		assert.InDelta(t, 198, res.Steps[1].Kind("get").Total(), 4)
		assert.InDelta(t, 9.9, res.Steps[0].Offered, 0.3)
	})
}

func TestUsersRampDownStopsUsers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		running := 0
		peak := map[int]int{}
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Users{Kinds: []string{"get"}, Behavior: func(u *loadtest.User) {
				mu.Lock()
				running++
				mu.Unlock()
				defer func() { mu.Lock(); running--; mu.Unlock() }()
				for u.Sleep(100 * time.Millisecond) {
				}
			}},
			Plan: loadtest.Ladder{Steps: []loadtest.Step{
				{Level: 8, Hold: time.Second},
				{Level: 3, Hold: time.Second},
			}},
			Checks: []loadtest.Check{loadtest.Custom("users", func(s *loadtest.StepResult) error {
				mu.Lock()
				peak[s.Index] = running
				mu.Unlock()
				return nil
			})},
		})
		require.Len(t, res.Steps, 2)
		assert.Equal(t, map[int]int{0: 8, 1: 3}, peak)
		synctest.Wait()
		assert.Equal(t, 0, running, "every user stopped at the end")
	})
}

// The production-calibrated MCP gateway workload, expressed with the user
// handle: a held stream per user, bursty calls (median 6 s inside a burst,
// ~90 s on average), 1% bots calling continuously, periodic reconnects with
// a handshake and listing, re-listing between calls, and a dashboard view
// with 5% of calls.
func TestUsersExpressTheCalibratedGatewayWorkload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bursts, err := dist.CalibratedBursts(6*time.Second, 20*time.Second, 5, 90*time.Second)
		require.NoError(t, err)
		upstream := dist.MustLogNormal(1200*time.Millisecond, 12*time.Second, 50*time.Second)
		ok := func(d time.Duration) func(context.Context) loadtest.Response { return sleeper(d) }
		var mu sync.Mutex
		streams, bots := 0, 0
		behavior := func(u *loadtest.User) {
			bot := u.Rand.Float64() < 0.01
			if bot {
				mu.Lock()
				bots++
				mu.Unlock()
			}
			connect := func() {
				u.Do("initialize", ok(5*time.Millisecond))
				u.Do("tools/list", ok(250*time.Millisecond))
			}
			connect()
			u.Go(func(ctx context.Context) { // the held stream
				mu.Lock()
				streams++
				mu.Unlock()
				<-ctx.Done()
			})
			// Reconnects about every 10 minutes, whatever the user is doing.
			reconnectRand := dist.New(11, uint64(u.ID)+1<<32)
			u.Go(func(ctx context.Context) {
				for u.Sleep(dist.Exponential[time.Duration]{Mean: 10 * time.Minute}.Sample(reconnectRand)) {
					connect()
				}
			})
			var gaps dist.Dist[time.Duration] = bursts
			if bot {
				gaps = dist.Fixed[time.Duration]{Value: 2 * time.Second, Jitter: time.Second}
			}
			for u.Think(gaps) {
				if u.Rand.Float64() < 0.1 {
					u.Do("tools/list", ok(250*time.Millisecond))
				}
				u.Do("tools/call", ok(upstream.Sample(u.Rand)))
				if u.Rand.Float64() < 0.05 {
					u.Do("dashboard", ok(20*time.Millisecond))
				}
			}
		}
		const users = 1000
		res := run(t, loadtest.Scenario{
			Seed:     11,
			Workload: &loadtest.Users{Kinds: []string{"initialize", "tools/list", "tools/call", "dashboard"}, Behavior: behavior},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: users, Ramp: time.Minute, Hold: 30 * time.Minute}}},
			Drain:    time.Minute,
		})
		s := res.Steps[0]
		calls := s.Kind("tools/call")
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, users, streams, "one held stream per user")
		assert.InDelta(t, 10, bots, 8, "about 1%% of users are bots")
		// A human's cycle is a ~90 s gap plus the call itself (mean ~3 s of
		// the capped log-normal); a bot's is ~2 s plus the call.
		meanCall := upstream.Mean().Seconds() * 0.95 // the cap trims the tail
		want := float64(users-bots)*1800/(90+meanCall) + float64(bots)*1800/(2+meanCall)
		assert.InEpsilon(t, want, float64(calls.Total()), 0.1)
		assert.InEpsilon(t, 0.05*float64(calls.Total()), float64(s.Kind("dashboard").Total()), 0.2)
		// Reconnects every ~10 min: about 3 handshakes per user in 30 min.
		assert.InEpsilon(t, 3*users, float64(s.Kind("initialize").Total()), 0.1)
		// The call latency is the calibrated upstream's.
		assert.InEpsilon(t, float64(1200*time.Millisecond), float64(calls.Latency.P50), 0.1)
		assert.InEpsilon(t, float64(12*time.Second), float64(calls.Latency.P95), 0.15)
	})
}

// The same seed gives the same run.
func TestUsersSameSeedSameRun(t *testing.T) {
	once := func(seed uint64) []int64 {
		var out []int64
		synctest.Test(t, func(t *testing.T) {
			res := run(t, loadtest.Scenario{
				Seed: seed,
				Workload: &loadtest.Users{Kinds: []string{"get"}, Behavior: func(u *loadtest.User) {
					for u.Sleep(dist.Exponential[time.Duration]{Mean: time.Second}.Sample(u.Rand)) {
						u.Do("get", sleeper(time.Duration(u.Rand.IntN(50))*time.Millisecond))
					}
				}},
				Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 20, Hold: 20 * time.Second}}},
			})
			g := res.Steps[0].Kind("get")
			out = []int64{g.Total(), int64(g.Latency.P50), int64(g.Latency.P99)}
		})
		return out
	}
	assert.Equal(t, once(5), once(5))
	assert.NotEqual(t, once(5), once(6))
}

// A pending observation belongs to the step in which it began, even when it
// ends after the hold; the step waits for it, and one never ended is a
// timeout. An abandoned one is not recorded.
func TestPendingObservationsBelongToTheirStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Users{Kinds: []string{"get", "delivery"}, Behavior: func(u *loadtest.User) {
				if !u.Sleep(9 * time.Second) { // 1 s before the end of the 10 s hold
					return
				}
				late, never, left := u.Begin("delivery"), u.Begin("delivery"), u.Begin("delivery")
				_ = never
				left.Abandon()
				u.Go(func(ctx context.Context) {
					time.Sleep(3 * time.Second) // ends 2 s after the hold
					late.End(loadtest.Response{Outcome: loadtest.OK})
				})
				u.Sleep(time.Hour)
			}},
			Plan:  loadtest.Ladder{Steps: []loadtest.Step{{Level: 4, Hold: 10 * time.Second}}},
			Drain: 5 * time.Second,
		})
		d := res.Steps[0].Kind("delivery")
		require.NotNil(t, d)
		assert.True(t, d.Observed, "an observation, not a request")
		assert.Equal(t, int64(4), d.Outcomes[loadtest.OK], "ended after the hold, recorded in its step")
		assert.Equal(t, 3*time.Second, d.Latency.P50.Round(time.Millisecond))
		assert.Equal(t, int64(4), d.Outcomes[loadtest.Timeout], "never ended: a timeout after the drain")
		assert.Equal(t, int64(8), d.Total(), "abandoned ones are not recorded")
		assert.Zero(t, res.Steps[0].Self.Unfinished, "observations are not the generator's requests")
	})
}
