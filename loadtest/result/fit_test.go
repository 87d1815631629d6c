package result_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/result"
)

func TestFitLine(t *testing.T) {
	// Exactly on a line: the slope with no spread.
	l, err := result.FitLine([]float64{500, 1000, 2000}, []float64{30e6 + 500*40e3, 30e6 + 1000*40e3, 30e6 + 2000*40e3})
	require.NoError(t, err)
	assert.InDelta(t, 40e3, l.Slope, 1e-6)
	assert.InDelta(t, 30e6, l.Intercept, 1e-3)
	assert.Equal(t, l.Slope, l.SlopeLow)
	assert.Equal(t, l.Slope, l.SlopeHigh)
	assert.InDelta(t, 1, l.R2, 1e-12)

	// A case worked by hand: slope 20.2/10 = 2.02, intercept 7.16 - 6.06,
	// residuals -0.12 0.26 0.04 -0.38 0.2 (SSE 0.268), standard error
	// sqrt(0.268/3/10), t(3) at 97.5% = 3.182446.
	l, err = result.FitLine([]float64{1, 2, 3, 4, 5}, []float64{3, 5.4, 7.2, 8.8, 11.4})
	require.NoError(t, err)
	assert.InDelta(t, 2.02, l.Slope, 1e-9)
	assert.InDelta(t, 1.1, l.Intercept, 1e-9)
	half := 3.182446 * math.Sqrt(0.268/3/10)
	assert.InDelta(t, 2.02-half, l.SlopeLow, 1e-5)
	assert.InDelta(t, 2.02+half, l.SlopeHigh, 1e-5)
	assert.InDelta(t, 1-0.268/(4.16*4.16+1.76*1.76+0.04*0.04+1.64*1.64+4.24*4.24), l.R2, 1e-9)

	// The interval covers the true slope about 95% of the time.
	rng := rand.New(rand.NewPCG(1, 2))
	covered := 0
	for range 1000 {
		xs, ys := []float64{500, 1000, 2000, 3000, 5000}, make([]float64, 5)
		for i, x := range xs {
			ys[i] = 20e6 + 40e3*x + rng.NormFloat64()*5e6
		}
		l, err := result.FitLine(xs, ys)
		require.NoError(t, err)
		if l.SlopeLow <= 40e3 && 40e3 <= l.SlopeHigh {
			covered++
		}
	}
	assert.InDelta(t, 950, covered, 25, "95%% intervals cover the true slope")

	_, err = result.FitLine([]float64{1}, []float64{1})
	assert.ErrorContains(t, err, "two points")
	_, err = result.FitLine([]float64{1, 1}, []float64{1, 2})
	assert.ErrorContains(t, err, "distinct")
	_, err = result.FitLine([]float64{1, 2}, []float64{1})
	assert.ErrorContains(t, err, "one y per x")
}
