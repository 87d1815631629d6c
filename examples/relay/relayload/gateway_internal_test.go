package relayload

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
)

// MeanGap scales the calibrated bursts: a short run keeps their shape at a
// mean of its own.
func TestGatewayMeanGap(t *testing.T) {
	for _, mean := range []time.Duration{0, time.Second, 30 * time.Second} {
		g, err := (Gateway{URL: "http://127.0.0.1:1/mcp", HTTP: &httpc.Client{}, Token: func(int) string { return "" }, MeanGap: mean}).withDefaults()
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(1, 2))
		var sum time.Duration
		const n = 50000
		for range n {
			sum += g.Gaps.Sample(r)
		}
		want := mean
		if want == 0 {
			want = 90 * time.Second
		}
		assert.InEpsilon(t, float64(want), float64(sum/n), 0.08, "MeanGap %v", mean)
	}
}

// The calibrated gateway model is in steady state from the first second of
// a hold: 800 modeled users, ramped over 30 s, make their level's load in
// every third of a 90 s hold — within ±10% of the analytic rate (humans
// call every 90 s on average, bots every 2 s, counted per run) in the mean
// of 20 seeds, and their reconnects within ±15% of theirs. Users started
// at the beginning of their cycle (four in five inside a burst) once made
// the first third 3.8 times the steady state; their first reconnects came
// minutes in.
func TestGatewayUsersStationaryFromTheFirstSecond(t *testing.T) {
	const users, seeds = 800, 20
	const ramp, hold = 30 * time.Second, 90 * time.Second
	g, err := (Gateway{URL: "http://127.0.0.1:1/mcp", HTTP: &httpc.Client{}, Token: func(int) string { return "" }}).withDefaults()
	require.NoError(t, err)
	var got, want, reconnects, wantReconnects [3]float64
	// A reconnect falls due an exponential time after the act that made
	// the last, and waits for the next act: its long-run rate, from one
	// user's simulated year.
	reconnectRate := func(d dist.Dist[time.Duration]) float64 {
		r := dist.New(9, 9)
		const year = 365 * 24 * time.Hour
		var now time.Duration
		due := time.Duration(r.ExpFloat64() * float64(g.Reconnect))
		n := 0
		for now < year {
			now += d.Sample(r)
			if now > due {
				n++
				due = now + time.Duration(r.ExpFloat64()*float64(g.Reconnect))
			}
		}
		return float64(n) / now.Seconds()
	}
	human, bot := reconnectRate(&g.Gaps), reconnectRate(g.BotGap)
	for seed := uint64(1); seed <= seeds; seed++ {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var calls, reconnected []time.Time
			bots := 0
			behave := func(u *loadtest.User) {
				gu := &gatewayUser{g: &g, u: u}
				gu.off.Unpooled = true
				first := true
				gu.live(func() { // the user's acts: a call each, counted
					mu.Lock()
					if first && gu.bot {
						bots++
					}
					first = false
					calls = append(calls, time.Now())
					if gu.reconnectDue() {
						reconnected = append(reconnected, time.Now())
					}
					mu.Unlock()
					gu.nextGap()
				})
			}
			start := time.Now()
			res, err := loadtest.Run(context.Background(), loadtest.Scenario{
				Seed:     seed,
				Workload: &loadtest.Users{Kinds: []string{mcp.KindCallTool}, Behavior: behave},
				Plan:     loadtest.Levels(ramp, hold, users),
				Drain:    time.Second, SeriesEvery: -1,
			})
			require.NoError(t, err)
			require.Len(t, res.Steps, 1)
			holdStart := start.Add(ramp)
			mu.Lock()
			defer mu.Unlock()
			perThird := func(ts []time.Time, into *[3]float64) {
				for _, c := range ts {
					if i := int(c.Sub(holdStart) / (hold / 3)); c.After(holdStart) && i < 3 {
						into[i] += 1 / (hold / 3).Seconds() / seeds
					}
				}
			}
			perThird(calls, &got)
			perThird(reconnected, &reconnects)
			second := float64(time.Second)
			rate := float64(users-bots)/(dist.Mean[time.Duration](g.Gaps)/second) + float64(bots)/(dist.Mean(g.BotGap)/second)
			again := float64(users-bots)*human + float64(bots)*bot
			for i := range want {
				want[i] += rate / seeds
				wantReconnects[i] += again / seeds
			}
		})
	}
	t.Logf("calls/s by third of the hold, mean of %d seeds: %.2f %.2f %.2f; steady state %.2f", seeds, got[0], got[1], got[2], want[0])
	t.Logf("reconnects/s: %.3f %.3f %.3f; steady state %.3f", reconnects[0], reconnects[1], reconnects[2], wantReconnects[0])
	for i := range got {
		assert.InEpsilon(t, want[i], got[i], 0.10, "calls, third %d of the hold", i+1)
		assert.InEpsilon(t, wantReconnects[i], reconnects[i], 0.15, "reconnects, third %d of the hold", i+1)
	}
}
