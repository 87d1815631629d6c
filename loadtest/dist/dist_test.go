package dist_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/dist"
)

const n = 20000

func quantile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[int(p/100*float64(len(s)-1))]
}

func draw[T dist.Number](d dist.Dist[T], seed uint64) []float64 {
	r := dist.New(seed, 1)
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(d.Sample(r))
	}
	return xs
}

func TestLogNormalMatchesCalibration(t *testing.T) {
	// The calibrated upstream: median 1.2 s, 5% over 12 s, capped at 50 s.
	d, err := dist.LogNormalFromMedianP95(1200*time.Millisecond, 12*time.Second, 50*time.Second)
	require.NoError(t, err)
	xs := draw[time.Duration](d, 7)
	assert.InEpsilon(t, float64(1200*time.Millisecond), quantile(xs, 50), 0.05, "median")
	assert.InEpsilon(t, float64(12*time.Second), quantile(xs, 95), 0.07, "p95")
	assert.LessOrEqual(t, slices.Max(xs), float64(50*time.Second), "cap")
	assert.Equal(t, 1200*time.Millisecond, d.Median().Round(time.Millisecond))
	assert.Equal(t, 12*time.Second, d.Quantile(95).Round(time.Millisecond))
}

func TestLogNormalRejectsBadInput(t *testing.T) {
	for _, tc := range []struct {
		name              string
		median, p95, capv time.Duration
	}{
		{"median=0", 0, time.Second, 0},
		{"p95 below median", time.Second, time.Millisecond, 0},
		{"negative cap", time.Second, 2 * time.Second, -1},
		{"cap below p95", time.Second, 10 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dist.LogNormalFromMedianP95(tc.median, tc.p95, tc.capv)
			assert.Error(t, err)
		})
	}
}

func TestFixedJitterBounds(t *testing.T) {
	xs := draw[time.Duration](dist.Fixed[time.Duration]{Value: time.Second, Jitter: 500 * time.Millisecond}, 3)
	assert.GreaterOrEqual(t, slices.Min(xs), float64(500*time.Millisecond))
	assert.LessOrEqual(t, slices.Max(xs), float64(1500*time.Millisecond))
	assert.InEpsilon(t, float64(time.Second), quantile(xs, 50), 0.03)
	assert.Equal(t, 5, dist.Fixed[int]{Value: 5}.Sample(dist.New(1, 1)))
}

func TestExponentialMean(t *testing.T) {
	xs := draw[float64](dist.Exponential[float64]{Mean: 90}, 11)
	mean := 0.0
	for _, x := range xs {
		mean += x / n
	}
	assert.InEpsilon(t, 90, mean, 0.03)
}

func TestChoiceAndMix(t *testing.T) {
	sizes, err := dist.NewMix(
		dist.Weighted[dist.Dist[int64]]{Weight: 98, Value: dist.Uniform[int64]{Min: 1 << 10, Max: 8 << 10}},
		dist.Weighted[dist.Dist[int64]]{Weight: 2, Value: dist.Fixed[int64]{Value: 1 << 20, Jitter: 1 << 16}},
	)
	require.NoError(t, err)
	big := 0
	for _, x := range draw[int64](sizes, 5) {
		if x > 512<<10 {
			big++
		}
	}
	// Binomial(n, 0.02): mean 400, sd ≈ 20; 5 sd either side.
	assert.InDelta(t, 400, big, 100)

	_, err = dist.NewChoice[string]()
	assert.Error(t, err, "empty choice")
	_, err = dist.NewChoice(dist.Weighted[string]{Weight: -1, Value: "x"})
	assert.Error(t, err, "negative weight")
}

func TestSameSeedSameSequence(t *testing.T) {
	d := dist.MustLogNormal(time.Second, 5*time.Second, 0)
	assert.Equal(t, draw[time.Duration](d, 42), draw[time.Duration](d, 42))
	assert.NotEqual(t, draw[time.Duration](d, 42), draw[time.Duration](d, 43))
}

func TestCalibratedBurstsMeanGap(t *testing.T) {
	b, err := dist.CalibratedBursts(6*time.Second, 20*time.Second, 5, 90*time.Second)
	require.NoError(t, err)
	r := dist.New(1, 2)
	var sum time.Duration
	short := 0
	for range n {
		d := b.Sample(r)
		sum += d
		if d < 30*time.Second {
			short++
		}
	}
	mean := sum / n
	assert.InEpsilon(t, float64(90*time.Second), float64(mean), 0.06, "overall mean gap")
	// 80% of gaps are inside a burst and most of those are short.
	assert.Greater(t, short, n*7/10)

	_, err = dist.CalibratedBursts(6*time.Second, 20*time.Second, 5, time.Second)
	assert.Error(t, err, "mean shorter than the bursts allow")
}
