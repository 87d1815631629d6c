package result_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/result"
)

const mib = 1 << 20

// soakSeries samples f every second over a hold of hold seconds.
func soakSeries(hold int, f func(t float64) float64) (ts, vs []float64) {
	for i := 0; i <= hold; i++ {
		ts, vs = append(ts, float64(i)), append(vs, f(float64(i)))
	}
	return ts, vs
}

// sawtooth is a garbage collector's heap: up by rise over period, then down.
func sawtooth(t, period, rise float64) float64 { return rise * math.Mod(t, period) / period }

func TestGrowthTellsALeakFromWarmUpAndNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(sd float64) float64 { return rng.NormFloat64() * sd }
	const hold = 120
	cases := []struct {
		name string
		unit string
		f    func(t float64) float64
		leak bool
	}{
		{"leak: memory +20 MiB over the hold, under a sawtooth and noise", "bytes",
			func(t float64) float64 { return 100*mib + 20*mib*t/hold + sawtooth(t, 7, 4*mib) + noise(mib) }, true},
		{"warm-up: +30 MiB, flat after the first sixth", "bytes",
			func(t float64) float64 { return 100*mib + 30*mib*(1-math.Exp(-t/(hold/16.0))) + noise(mib/2) }, false},
		{"steady: a sawtooth and noise", "bytes",
			func(t float64) float64 { return 100*mib + sawtooth(t, 11, 8*mib) + noise(2*mib) }, false},
		{"too little: +2% over the hold", "bytes",
			func(t float64) float64 { return 100*mib + 2*mib*t/hold + noise(mib/10) }, false},
		{"goroutines: +1 a second", "count",
			func(t float64) float64 { return 80 + t + noise(15) }, true},
		{"goroutines: requests in flight come and go", "count",
			func(t float64) float64 { return 80 + math.Abs(noise(30)) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts, vs := soakSeries(hold, tc.f)
			g, ok := result.NewGrowth("svc", "memory", tc.unit, 0, ts, vs, hold)
			require.True(t, ok)
			t.Logf("%s", g)
			assert.Equal(t, tc.leak, g.Leak, "%s", g)
			assert.Equal(t, result.GrowthWindows, g.Windows)
			assert.InDelta(t, hold/3.0, g.From, 1e-9, "the first third is warm-up")
		})
	}
}

// TestGrowthFalseLeaks: of 1,000 steady series of a second's samples
// over 3 minutes — a plateau of 100 MiB with autocorrelated wander (an
// AR(1) of coefficient 0.9 and a standard deviation of 1.15 MiB, as a
// container's memory drifts sample to sample) and a 3 MiB sawtooth —
// fewer than 1% read as a leak (none did here); of 1,000 series that grow
// 10% over the fit under the same noise, more than 90% do (94% here). A
// wander twice as wide is read as a leak 2.3% of the time: a soak's hold
// must be long against its series' wander.
func TestGrowthFalseLeaks(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const hold, n = 180, 1000
	series := func(growth float64) []float64 {
		var vs []float64
		ar := 0.0
		for i := 0; i <= hold; i++ {
			ar = 0.9*ar + rng.NormFloat64()*mib/2
			vs = append(vs, 100*mib+growth*float64(i)/hold+ar+sawtooth(float64(i), 13, 3*mib))
		}
		return vs
	}
	ts, _ := soakSeries(hold, func(float64) float64 { return 0 })
	var falses, found int
	for range n {
		if g, _ := result.NewGrowth("svc", "memory", "bytes", 0, ts, series(0), hold); g.Leak {
			falses++
		}
		// 10% over the fit's two thirds: 15 MiB over the hold.
		if g, _ := result.NewGrowth("svc", "memory", "bytes", 0, ts, series(15*mib), hold); g.Leak {
			found++
		}
	}
	t.Logf("steady series read as a leak: %d of %d; growing ones found: %d of %d", falses, n, found, n)
	assert.Less(t, falses, n/100)
	assert.Greater(t, found, n*90/100)
}

func TestGrowthNeedsSamples(t *testing.T) {
	ts, vs := soakSeries(30, func(t float64) float64 { return t })
	_, ok := result.FitGrowth(ts[:15], vs[:15], 15)
	assert.False(t, ok, "10 samples past the warm-up: 5 windows, fewer than MinGrowthWindows")
	g, ok := result.FitGrowth(ts, vs, 30)
	require.True(t, ok)
	assert.Equal(t, 10, g.Windows)
	assert.InDelta(t, 3600, g.PerHour, 1e-6)
	assert.InDelta(t, 1, g.LateRatio, 1e-9)
}

func TestGrowthDescribesItself(t *testing.T) {
	ts, vs := soakSeries(60, func(t float64) float64 { return 100*mib + mib*t })
	g, ok := result.NewGrowth("relay", "memory", "bytes", 512*mib, ts, vs, 60)
	require.True(t, ok)
	assert.True(t, g.Leak)
	assert.Contains(t, g.String(), "relay memory: +3.516GiB/h")
	assert.Contains(t, g.String(), "over the hold's last 40s, 120MiB to 160MiB: a leak")
	assert.Contains(t, g.Day(), "its 512MiB limit in 0.1 h")
}

// TestGrowthLeakMatters: a soak of half a minute, sampled every half
// second, of a relay whose heap is still finding its size (+1.3 MiB over
// the fit, about 230 MiB/h, as the steady relay's did in a -short soak
// here) and one that leaks 16 KiB a call (+28 MiB, about 5 GiB/h). Past
// the floors both read as leaks; with 512 MiB/h stated as what matters,
// only the second does, and the first says why it is not one. Goroutines
// keep their floors.
func TestGrowthLeakMatters(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const hold = 30
	var ts []float64
	for i := 0; i <= 2*hold; i++ {
		ts = append(ts, float64(i)/2)
	}
	series := func(start, perHour, noise float64) []float64 {
		var vs []float64
		for _, t := range ts {
			vs = append(vs, start+perHour*t/3600+rng.NormFloat64()*noise)
		}
		return vs
	}
	warming := series(8.8*mib, 240*mib, 0.15*mib)
	leaking := series(20*mib, 5<<30, 1.5*mib)
	const matters = 512 * mib

	g, ok := result.NewGrowth("relay", "memory", "bytes", 512*mib, ts, warming, hold)
	require.True(t, ok)
	require.True(t, g.Leak, "past the floors alone, a heap still growing reads as a leak: %s", g)
	g = g.MattersAt(matters)
	assert.False(t, g.Leak, "%s", g)
	assert.Contains(t, g.String(), "grew, not surely as fast as the 512MiB/h that matters")
	assert.Equal(t, float64(matters), g.Matters)

	l, ok := result.NewGrowth("relay", "memory", "bytes", 512*mib, ts, leaking, hold)
	require.True(t, ok)
	l = l.MattersAt(matters)
	assert.True(t, l.Leak, "%s", l)
	assert.True(t, l.MattersAt(0).Leak)

	gs, ok := result.NewGrowth("relay", "goroutines", "count", 0, ts, series(30, 2e5, 3), hold)
	require.True(t, ok)
	gs = gs.MattersAt(matters)
	assert.True(t, gs.Leak, "a goroutine a call: %s", gs)
	assert.Zero(t, gs.Matters, "a rate in bytes says nothing of goroutines")
}
