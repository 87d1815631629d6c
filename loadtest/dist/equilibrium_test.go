package dist_test

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/dist"
)

// opaque hides a distribution's methods, so that the package's generic
// approximations are what is tested.
type opaque[T dist.Number] struct{ d dist.Dist[T] }

func (o opaque[T]) Sample(r *rand.Rand) T { return o.d.Sample(r) }

// renewal simulates a long run of back-to-back gaps drawn from d and
// returns, for instants drawn uniformly over it, the length of the gap
// each falls in and what is left of it: the definition LengthBiased and
// Residual must match.
func renewal(d dist.Dist[float64], instants int, seed uint64) (lengths, left []float64) {
	r := dist.New(seed, 99)
	mean := 0.0
	for range 10000 {
		mean += d.Sample(r) / 10000
	}
	var ends []float64
	t := 0.0
	for t < 400000*mean {
		t += d.Sample(r)
		ends = append(ends, t)
	}
	for range instants {
		at := r.Float64() * t
		i := sort.SearchFloat64s(ends, at)
		if i < len(ends) && ends[i] == at {
			i++
		}
		start := 0.0
		if i > 0 {
			start = ends[i-1]
		}
		lengths = append(lengths, ends[i]-start)
		left = append(left, ends[i]-at)
	}
	return lengths, left
}

func quantiles(xs []float64) [5]float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	var q [5]float64
	for i, p := range []float64{10, 25, 50, 75, 90} {
		q[i] = s[int(p/100*float64(len(s)-1))]
	}
	return q
}

func seconds(d dist.Dist[time.Duration]) dist.Dist[float64] { return asSeconds{d} }

type asSeconds struct{ d dist.Dist[time.Duration] }

func (a asSeconds) Sample(r *rand.Rand) float64 { return a.d.Sample(r).Seconds() }

// Each distribution's LengthBiased and Residual match a simulated renewal
// process — the gap a random instant falls in, and what is left of it —
// at five quantiles, and Mean matches the mean of its draws.
func TestResidualMatchesRenewal(t *testing.T) {
	bursts, err := dist.CalibratedBursts(6*time.Second, 20*time.Second, 5, 90*time.Second)
	require.NoError(t, err)
	mix, err := dist.NewMix(
		dist.Weighted[dist.Dist[float64]]{Weight: 9, Value: dist.Uniform[float64]{Min: 1, Max: 2}},
		dist.Weighted[dist.Dist[float64]]{Weight: 1, Value: dist.Exponential[float64]{Mean: 30}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		d    dist.Dist[float64]
		// lb and res are the distribution's own draws, for those whose
		// methods are not reached through float64 (time.Duration ones).
		lb, res func(r *rand.Rand) float64
		mean    func() float64
	}{
		// A fixed gap: what is left is uniform on [0, v].
		{name: "fixed", d: dist.Fixed[float64]{Value: 10}},
		{name: "fixed±jitter", d: dist.Fixed[float64]{Value: 10, Jitter: 5}},
		// Jitter wider than the value: a share of the draws is clamped to zero.
		{name: "fixed clamped", d: dist.Fixed[float64]{Value: 2, Jitter: 6}},
		// The desk agents' time between cases.
		{name: "uniform", d: dist.Uniform[float64]{Min: 5, Max: 20}},
		{name: "exponential", d: dist.Exponential[float64]{Mean: 90}},
		// A cap far below the mean, and one far above it.
		{name: "exponential capped low", d: dist.Exponential[float64]{Mean: 90, Cap: 30}},
		{name: "exponential capped high", d: dist.Exponential[float64]{Mean: 10, Cap: 100}},
		{name: "log-normal", d: dist.MustLogNormal[float64](1.2, 12, 0)},
		// The calibrated upstream: the cap clamps a share of the draws.
		{name: "log-normal capped", d: dist.MustLogNormal[float64](1.2, 12, 15)},
		{name: "mix", d: mix},
		// The gateway's calibrated bursts, through time.Duration.
		{name: "bursts", d: seconds(bursts),
			lb:   func(r *rand.Rand) float64 { return dist.LengthBiased[time.Duration](bursts, r).Seconds() },
			res:  func(r *rand.Rand) float64 { return dist.Residual[time.Duration](bursts, r).Seconds() },
			mean: func() float64 { return dist.Mean[time.Duration](bursts) / 1e9 }},
		// A distribution of another package: the approximations.
		{name: "opaque", d: opaque[float64]{dist.Uniform[float64]{Min: 5, Max: 20}}},
	} {
		t.Run("dist="+tc.name, func(t *testing.T) {
			if tc.lb == nil {
				tc.lb = func(r *rand.Rand) float64 { return dist.LengthBiased(tc.d, r) }
				tc.res = func(r *rand.Rand) float64 { return dist.Residual(tc.d, r) }
				tc.mean = func() float64 { return dist.Mean(tc.d) }
			}
			const n = 20000
			lengths, left := renewal(tc.d, n, 1)
			r := dist.New(2, 3)
			var lb, res []float64
			sum := 0.0
			for range n {
				lb, res = append(lb, tc.lb(r)), append(res, tc.res(r))
				sum += tc.d.Sample(r)
			}
			scale := quantiles(lengths)[2]
			for i, q := range quantiles(lengths) {
				assert.InDelta(t, q, quantiles(lb)[i], 0.06*q+0.01*scale, "length-biased quantile %d", i)
			}
			for i, q := range quantiles(left) {
				assert.InDelta(t, q, quantiles(res)[i], 0.06*q+0.01*scale, "residual quantile %d", i)
			}
			assert.InEpsilon(t, sum/n, tc.mean(), 0.04, "mean")
		})
	}
}

// A gateway user started at a random point of its bursts is most likely in
// a quiet spell: the first gap's mean is E[X²]/2E[X], minutes, where a
// plain draw (four in five inside a burst) would be seconds.
func TestBurstsResidualIsMostlyQuiet(t *testing.T) {
	b, err := dist.CalibratedBursts(6*time.Second, 20*time.Second, 5, 90*time.Second)
	require.NoError(t, err)
	r := dist.New(1, 1)
	var plain, residual time.Duration
	for range n {
		plain += b.Sample(r) / n
		residual += dist.Residual[time.Duration](b, r) / n
	}
	assert.InEpsilon(t, float64(90*time.Second), float64(plain), 0.06, "the mean gap")
	// Quiet gaps are exponential with mean q = 5·90 − 4·E[in] ≈ 419 s, one
	// in five: E[X²]/2E[X] ≈ (0.2·2q²)/(2·90) ≈ 390 s; 93% of instants
	// fall in a quiet spell.
	assert.Greater(t, residual, 340*time.Second)
	assert.Less(t, residual, 440*time.Second)
}
