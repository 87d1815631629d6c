package mcp

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
// of 20 seeds. Users started at the beginning of their cycle (four in five
// inside a burst) once made the first third 2–3 times the last.
func TestGatewayUsersStationaryFromTheFirstSecond(t *testing.T) {
	const users, seeds = 800, 20
	const ramp, hold = 30 * time.Second, 90 * time.Second
	g, err := (Gateway{URL: "http://127.0.0.1:1/mcp", HTTP: &httpc.Client{}, Token: func(int) string { return "" }}).withDefaults()
	require.NoError(t, err)
	var got, want [3]float64
	for seed := uint64(1); seed <= seeds; seed++ {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			var calls []time.Time
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
					mu.Unlock()
					gu.nextGap()
				})
			}
			start := time.Now()
			res, err := loadtest.Run(context.Background(), loadtest.Scenario{
				Seed:     seed,
				Workload: &loadtest.Users{Kinds: []string{KindCallTool}, Behavior: behave},
				Plan:     loadtest.Levels(ramp, hold, users),
				Drain:    time.Second, SeriesEvery: -1,
			})
			require.NoError(t, err)
			require.Len(t, res.Steps, 1)
			holdStart := start.Add(ramp)
			mu.Lock()
			defer mu.Unlock()
			for _, c := range calls {
				if i := int(c.Sub(holdStart) / (hold / 3)); c.After(holdStart) && i < 3 {
					got[i] += 1 / (hold / 3).Seconds() / seeds
				}
			}
			second := float64(time.Second)
			rate := float64(users-bots)/(dist.Mean[time.Duration](g.Gaps)/second) + float64(bots)/(dist.Mean(g.BotGap)/second)
			for i := range want {
				want[i] += rate / seeds
			}
		})
	}
	t.Logf("calls/s by third of the hold, mean of %d seeds: %.2f %.2f %.2f; steady state %.2f", seeds, got[0], got[1], got[2], want[0])
	for i := range got {
		assert.InEpsilon(t, want[i], got[i], 0.10, "third %d of the hold", i+1)
	}
}
