package changepoint

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// naiveQ is Q̂ of the split at tau, straight from its definition.
func naiveQ(x []float64, tau int) float64 {
	left, right := x[:tau], x[tau:]
	m, k := float64(len(left)), float64(len(right))
	cross, withinL, withinR := 0.0, 0.0, 0.0
	for _, a := range left {
		for _, b := range right {
			cross += math.Abs(a - b)
		}
	}
	for i := range left {
		for j := i + 1; j < len(left); j++ {
			withinL += math.Abs(left[i] - left[j])
		}
	}
	for i := range right {
		for j := i + 1; j < len(right); j++ {
			withinR += math.Abs(right[i] - right[j])
		}
	}
	e := 2*cross/(m*k) - withinL/(m*(m-1)/2) - withinR/(k*(k-1)/2)
	return m * k / (m + k) * e
}

func TestEnergyMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 4; n <= 25; n++ {
		for minSize := 2; 2*minSize <= n; minSize++ {
			x := make([]float64, n)
			for i := range x {
				x[i] = rng.NormFloat64()
			}
			order := rng.Perm(n)
			permuted := make([]float64, n)
			for i, o := range order {
				permuted[i] = x[o]
			}
			wantStat, wantTau := math.Inf(-1), 0
			for tau := minSize; tau <= n-minSize; tau++ {
				if q := naiveQ(permuted, tau); q > wantStat {
					wantStat, wantTau = q, tau
				}
			}
			stat, tau := newEnergy(x, minSize).best(order)
			assert.InDelta(t, wantStat, stat, 1e-9, "n=%d minSize=%d", n, minSize)
			assert.Equal(t, wantTau, tau, "n=%d minSize=%d", n, minSize)
		}
	}
}

func TestExactKendall(t *testing.T) {
	// n=4: the 24 orders have S = 6 once and −6 once, so P(|S| ≥ 6) = 2/24;
	// S = ±4 three times each, so P(|S| ≥ 4) = 8/24.
	assert.InDelta(t, 2.0/24, exactKendallP(4, 6), 1e-12)
	assert.InDelta(t, 8.0/24, exactKendallP(4, -4), 1e-12)
	assert.InDelta(t, 1, exactKendallP(5, 0), 1e-12)
	// A perfect order of 10: 2/10!.
	assert.InDelta(t, 2/3628800.0, exactKendallP(10, 45), 1e-15)
	// The smallest p-value of 5 points, 2/120, is above the default
	// TrendAlpha: a 5-point segment cannot show a trend.
	assert.Greater(t, exactKendallP(5, 10), DefaultTrendAlpha)
}

func TestMannKendallApproximation(t *testing.T) {
	// Beyond 10 points the normal approximation takes over: it must agree
	// with the exact distribution where both apply.
	for _, s := range []int{9, 15, 21, 27} {
		nf := 10.0
		z := (float64(s) - 1) / math.Sqrt(nf*(nf-1)*(2*nf+5)/18)
		assert.InDelta(t, exactKendallP(10, s), math.Erfc(z/math.Sqrt2), 0.02, "S=%d", s)
	}
}

func TestPermutationPValueIsUniform(t *testing.T) {
	// Under no change, the permutation p-value is uniform: about a tenth
	// of noise segments fall at or below 0.1.
	o, _ := Options{Alpha: 0.1, Permutations: 99}.withDefaults()
	below := 0
	const runs = 1000
	for s := range runs {
		rng := rand.New(rand.NewPCG(splitmix64(uint64(s)), 9))
		x := make([]float64, 20)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		if _, _, ok := permutationTest(x, o, rng); ok {
			below++
		}
	}
	assert.InDelta(t, 0.1, float64(below)/runs, 0.03, "%d/%d", below, runs)
}
