package changepoint_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/changepoint"
)

// nights returns n values of base × exp(N(0, sigma)) times shape(i).
func nights(seed uint64, n int, sigma float64, shape func(int) float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]float64, n)
	for i := range out {
		out[i] = 100 * math.Exp(sigma*rng.NormFloat64()) * shape(i)
	}
	return out
}

func TestConstantSeries(t *testing.T) {
	series := make([]float64, 40)
	for i := range series {
		series[i] = 12.5
	}
	a, err := changepoint.Analyze(series, changepoint.Options{})
	require.NoError(t, err)
	assert.Empty(t, a.Changes)
	assert.Empty(t, a.Trends)
}

func TestTooShort(t *testing.T) {
	for n := range 6 { // fewer than 2×MinSize points: nothing can split
		series := make([]float64, n)
		for i := range series {
			series[i] = 1
			if i >= n/2 {
				series[i] = 100
			}
		}
		a, err := changepoint.Analyze(series, changepoint.Options{})
		require.NoError(t, err, "n=%d", n)
		assert.Empty(t, a.Changes, "n=%d", n)
		assert.Empty(t, a.Trends, "n=%d", n)
	}
}

func TestRefusesBadValues(t *testing.T) {
	for _, bad := range []float64{math.NaN(), -1.5, 0, math.Inf(1), math.Inf(-1)} {
		series := []float64{1, 2, 3, bad, 5}
		_, err := changepoint.Analyze(series, changepoint.Options{})
		require.Error(t, err, "value %v", bad)
		assert.True(t, errors.Is(err, changepoint.ErrNotPositive), "%v", err)
		assert.Contains(t, err.Error(), "value 3 is ")
	}
}

func TestRefusesBadOptions(t *testing.T) {
	for _, c := range []struct {
		o    changepoint.Options
		want string
	}{
		{changepoint.Options{Alpha: 1}, "Alpha"},
		{changepoint.Options{Alpha: -0.1}, "Alpha"},
		{changepoint.Options{Permutations: 99}, "at least 199"},
		{changepoint.Options{Permutations: -5}, "Permutations"},
		{changepoint.Options{MinSize: 1}, "MinSize"},
		{changepoint.Options{TrendAlpha: 2}, "TrendAlpha"},
		{changepoint.Options{MinSlope: -0.01}, "MinSlope"},
		{changepoint.Options{MinTrend: 2}, "MinTrend"},
	} {
		_, err := changepoint.Analyze([]float64{1, 2, 3}, c.o)
		if assert.Error(t, err, "%+v", c.o) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}

func TestDeterministic(t *testing.T) {
	series := nights(7, 40, 0.05, func(i int) float64 {
		if i >= 17 {
			return 1.3
		}
		return 1
	})
	first, err := changepoint.Analyze(series, changepoint.Options{})
	require.NoError(t, err)
	require.NotEmpty(t, first.Changes)
	for range 3 {
		again, err := changepoint.Analyze(series, changepoint.Options{})
		require.NoError(t, err)
		assert.Equal(t, first, again)
	}
	// Another seed draws other permutations: the p-values may move, the
	// step stays.
	other, err := changepoint.Analyze(series, changepoint.Options{Seed: 42})
	require.NoError(t, err)
	require.NotEmpty(t, other.Changes)
	assert.Equal(t, first.Changes[0].Index, other.Changes[0].Index)
}

func TestTwoSteps(t *testing.T) {
	series := nights(3, 36, 0.03, func(i int) float64 {
		switch {
		case i >= 24:
			return 1.1
		case i >= 12:
			return 1.5
		}
		return 1
	})
	a, err := changepoint.Analyze(series, changepoint.Options{})
	require.NoError(t, err)
	require.Len(t, a.Changes, 2, "%v", a.Changes)
	assert.Equal(t, 12, a.Changes[0].Index)
	assert.InDelta(t, 1.5, a.Changes[0].Ratio, 0.05)
	assert.Equal(t, 24, a.Changes[1].Index)
	assert.InDelta(t, 1.1/1.5, a.Changes[1].Ratio, 0.05)
	assert.Empty(t, a.Trends)
	// The medians are the neighbouring segments', in the series' units.
	assert.InDelta(t, 100, a.Changes[0].Before, 3)
	assert.InDelta(t, 150, a.Changes[0].After, 5)
	assert.InDelta(t, a.Changes[0].After, a.Changes[1].Before, 1e-9)
	assert.InDelta(t, a.Changes[1].After/a.Changes[1].Before, a.Changes[1].Ratio, 1e-12)
	for _, c := range a.Changes {
		assert.LessOrEqual(t, c.P, changepoint.DefaultAlpha)
	}
}

func TestStepInFlatSeriesIsNotATrend(t *testing.T) {
	series := nights(11, 30, 0.03, func(i int) float64 {
		if i >= 15 {
			return 1.2
		}
		return 1
	})
	a, err := changepoint.Analyze(series, changepoint.Options{})
	require.NoError(t, err)
	require.Len(t, a.Changes, 1)
	assert.Equal(t, 15, a.Changes[0].Index)
	assert.Empty(t, a.Trends)
}

func TestCreepThenStep(t *testing.T) {
	// A drift of +2% a night with a ×1.4 step on top at night 20: the step
	// is found on top of the drift, and the drift either side of it.
	series := nights(5, 40, 0.03, func(i int) float64 {
		f := math.Pow(1.02, float64(i))
		if i >= 20 {
			f *= 1.4
		}
		return f
	})
	a, err := changepoint.Analyze(series, changepoint.Options{})
	require.NoError(t, err)
	require.Len(t, a.Changes, 1, "%v %v", a.Changes, a.Trends)
	assert.Equal(t, 20, a.Changes[0].Index)
	require.Len(t, a.Trends, 2, "%v", a.Trends)
	for _, tr := range a.Trends {
		assert.InDelta(t, 0.02, tr.PerStep, 0.008, "%v", tr)
	}
	assert.Equal(t, 0, a.Trends[0].From)
	assert.Equal(t, 19, a.Trends[0].To)
	assert.Equal(t, 20, a.Trends[1].From)
	assert.Equal(t, 39, a.Trends[1].To)
}

func TestFallingTrend(t *testing.T) {
	series := nights(9, 25, 0.03, func(i int) float64 { return math.Pow(0.97, float64(i)) })
	a, err := changepoint.Analyze(series, changepoint.Options{})
	require.NoError(t, err)
	assert.Empty(t, a.Changes)
	require.Len(t, a.Trends, 1)
	tr := a.Trends[0]
	assert.Equal(t, 0, tr.From)
	assert.Equal(t, 24, tr.To)
	assert.InDelta(t, -0.03, tr.PerStep, 0.006)
	assert.InDelta(t, math.Pow(1+tr.PerStep, 24), tr.Total, 1e-9)
	assert.Less(t, tr.P, 0.001)
}

func TestTies(t *testing.T) {
	// Figures rounded to a coarse unit repeat: a step between two tied
	// levels, and a trend made of tied plateaus.
	var series []float64
	for i := range 24 {
		v := 40.0
		if i%5 == 2 {
			v = 41
		}
		if i >= 12 {
			v = 52
		}
		series = append(series, v)
	}
	a, err := changepoint.Analyze(series, changepoint.Options{})
	require.NoError(t, err)
	require.Len(t, a.Changes, 1, "%v", a.Changes)
	assert.Equal(t, 12, a.Changes[0].Index)
	assert.InDelta(t, 1.3, a.Changes[0].Ratio, 1e-9)
	assert.Empty(t, a.Trends)

	stairs := []float64{10, 10, 11, 11, 12, 12, 13, 13, 14, 14} // ties, n ≤ 10: permutation test
	a, err = changepoint.Analyze(stairs, changepoint.Options{})
	require.NoError(t, err)
	assert.Empty(t, a.Changes)
	require.Len(t, a.Trends, 1)
	assert.Less(t, a.Trends[0].P, 0.01)
	assert.InDelta(t, math.Pow(1.4, 1.0/9)-1, a.Trends[0].PerStep, 0.01)

	long := append(append([]float64{}, stairs...), 15, 15, 16, 16, 17, 17) // ties, n > 10: normal approximation
	a, err = changepoint.Analyze(long, changepoint.Options{})
	require.NoError(t, err)
	assert.Empty(t, a.Changes)
	require.Len(t, a.Trends, 1)
	assert.Less(t, a.Trends[0].P, 0.001)
}

func TestStrings(t *testing.T) {
	c := changepoint.Change{Index: 12, Before: 100, After: 131, Ratio: 1.31, P: 0.002}
	assert.Equal(t, "×1.31 at 12 (p=0.002)", c.String())
	c.P = 0.0004
	assert.Equal(t, "×1.31 at 12 (p<0.001)", c.String())
	tr := changepoint.Trend{From: 3, To: 10, PerStep: 0.031, Total: math.Pow(1.031, 7), P: 0.002}
	assert.Equal(t, "+3.1%/step over 3–10 (p=0.002)", tr.String())
	tr.PerStep = -0.0125
	assert.True(t, strings.HasPrefix(tr.String(), "-1.2%/step"), tr.String())
}

func BenchmarkAnalyze30(b *testing.B) {
	// 30 nights with a ×1.3 step: one accepted split (all permutations)
	// and the tests of its two halves.
	series := nights(1, 30, 0.08, func(i int) float64 {
		if i >= 15 {
			return 1.3
		}
		return 1
	})
	for b.Loop() {
		if _, err := changepoint.Analyze(series, changepoint.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
