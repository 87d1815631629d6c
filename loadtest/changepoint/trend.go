package changepoint

import (
	"math"
	"math/rand/v2"
	"slices"
)

// theilSen returns the Theil–Sen line of values against their index: the
// median of the slopes of all pairs of points, and the median of
// value − slope×index as the intercept.
func theilSen(values []float64) (slope, intercept float64) {
	n := len(values)
	if n < 2 {
		if n == 1 {
			return 0, values[0]
		}
		return 0, 0
	}
	slopes := make([]float64, 0, n*(n-1)/2)
	for i := range n {
		for j := i + 1; j < n; j++ {
			slopes = append(slopes, (values[j]-values[i])/float64(j-i))
		}
	}
	slope = median(slopes)
	offsets := make([]float64, n)
	for i, v := range values {
		offsets[i] = v - slope*float64(i)
	}
	return slope, median(offsets)
}

// kendallS is the Mann–Kendall statistic: Σ_{i<j} sign(values[j] − values[i]).
func kendallS(values []float64) int {
	s := 0
	for i, v := range values {
		for _, w := range values[i+1:] {
			switch {
			case w > v:
				s++
			case w < v:
				s--
			}
		}
	}
	return s
}

// exactMannKendallMax is the longest series whose Mann–Kendall p-value is
// taken from the exact null distribution (without ties) or a permutation
// test (with ties) instead of the normal approximation.
const exactMannKendallMax = 10

// mannKendall returns the two-sided p-value of the Mann–Kendall test of a
// monotonic trend in values. Up to exactMannKendallMax points it is exact
// when the values have no ties (the distribution of the number of
// inversions of a random permutation) and a permutation test of
// permutations random orders otherwise; beyond, the normal approximation
// with the tie correction of the variance and a continuity correction.
func mannKendall(values []float64, permutations int, rng *rand.Rand) float64 {
	n := len(values)
	s := kendallS(values)
	if s == 0 {
		return 1
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	tieTerm := 0.0 // Σ t(t−1)(2t+5) over groups of t tied values
	for i := 0; i < n; {
		j := i + 1
		for j < n && sorted[j] == sorted[i] {
			j++
		}
		t := float64(j - i)
		tieTerm += t * (t - 1) * (2*t + 5)
		i = j
	}
	if n <= exactMannKendallMax {
		if tieTerm == 0 {
			return exactKendallP(n, s)
		}
		return permutedKendallP(values, s, permutations, rng)
	}
	nf := float64(n)
	variance := (nf*(nf-1)*(2*nf+5) - tieTerm) / 18
	if variance <= 0 {
		return 1
	}
	z := (math.Abs(float64(s)) - 1) / math.Sqrt(variance)
	return math.Erfc(z / math.Sqrt2)
}

// exactKendallP returns P(|S| ≥ |s|) for the Mann–Kendall statistic S of n
// values in random order without ties. S = n(n−1)/2 − 2·inversions, and
// the number of inversions of a random permutation follows the Mahonian
// distribution, built here one element at a time.
func exactKendallP(n, s int) float64 {
	pairs := n * (n - 1) / 2
	probs := []float64{1} // distribution of inversions among the first m elements
	for m := 2; m <= n; m++ {
		next := make([]float64, len(probs)+m-1)
		// Adding the m-th element adds 0..m−1 inversions, each with
		// probability 1/m: next[k] = Σ_{j=0}^{m−1} probs[k−j] / m.
		window := 0.0
		for k := range next {
			if k < len(probs) {
				window += probs[k]
			}
			if k-m >= 0 && k-m < len(probs) {
				window -= probs[k-m]
			}
			next[k] = window / float64(m)
		}
		probs = next
	}
	abs := s
	if abs < 0 {
		abs = -abs
	}
	p := 0.0
	for inversions, prob := range probs {
		stat := pairs - 2*inversions
		if stat >= abs || -stat >= abs {
			p += prob
		}
	}
	return min(p, 1)
}

// permutedKendallP returns the permutation p-value of the Mann–Kendall
// statistic s of values: (1 + #{|S| of a random order ≥ |s|}) / (R+1).
func permutedKendallP(values []float64, s, permutations int, rng *rand.Rand) float64 {
	shuffled := slices.Clone(values)
	abs := s
	if abs < 0 {
		abs = -abs
	}
	reach := 0
	for range permutations {
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if t := kendallS(shuffled); t >= abs || -t >= abs {
			reach++
		}
	}
	return float64(1+reach) / float64(permutations+1)
}
