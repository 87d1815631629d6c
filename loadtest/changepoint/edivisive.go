package changepoint

import (
	"math"
	"math/rand/v2"
)

// energy holds what the E-divisive statistic of one segment needs,
// whatever the order of its points: the pairwise distances |x_i − x_j|
// (exponent α = 1), their row sums and their total.
type energy struct {
	n       int
	minSize int
	dist    []float64 // n×n, row-major
	rowSum  []float64 // rowSum[i] = Σ_j dist[i][j]
	total   float64   // Σ_{i<j} dist[i][j]
}

func newEnergy(values []float64, minSize int) *energy {
	n := len(values)
	e := &energy{n: n, minSize: minSize, dist: make([]float64, n*n), rowSum: make([]float64, n)}
	for i := range n {
		for j := i + 1; j < n; j++ {
			d := math.Abs(values[i] - values[j])
			e.dist[i*n+j] = d
			e.dist[j*n+i] = d
			e.rowSum[i] += d
			e.rowSum[j] += d
			e.total += d
		}
	}
	return e
}

// best returns the largest scaled energy statistic Q̂ over the splits of
// the segment with its points in the given order, and the split: the size
// of the first part. For a split into X (the first m points) and Y (the
// other k),
//
//	Ê = 2/(mk) Σ|X_i−Y_j| − 2/(m(m−1)) Σ_{i<l}|X_i−X_l| − 2/(k(k−1)) Σ_{j<l}|Y_j−Y_l|
//	Q̂ = mk/(m+k) · Ê
//
// Both parts must have at least minSize points. The within-X sum is built
// up point by point; the cross sum is the row sums of X less twice the
// within-X sum, and the within-Y sum what is left of the total; so one
// order costs n²/2 additions.
func (e *energy) best(order []int) (stat float64, tau int) {
	n := e.n
	nf := float64(n)
	withinX, rowsX := 0.0, 0.0
	stat, tau = math.Inf(-1), 0
	for t := 0; t < n-e.minSize; t++ {
		row := e.dist[order[t]*n : (order[t]+1)*n]
		for _, i := range order[:t] {
			withinX += row[i]
		}
		rowsX += e.rowSum[order[t]]
		m := t + 1
		if m < e.minSize {
			continue
		}
		k := n - m
		mf, kf := float64(m), float64(k)
		cross := rowsX - 2*withinX
		withinY := e.total - withinX - cross
		q := 2*cross/nf - 2*kf*withinX/(nf*(mf-1)) - 2*mf*withinY/(nf*(kf-1))
		if q > stat {
			stat, tau = q, m
		}
	}
	return stat, tau
}

// permutationTest finds the best split of values (the size of its first
// part, tau) and judges it against o.Permutations random permutations of
// the same values: p = (1 + #{permutation statistic ≥ observed}) / (R+1),
// significant when p ≤ o.Alpha. The permutations stop as soon as enough of
// them reach the observed statistic for p to exceed Alpha: the verdict is
// the one all R would give (curtailed sampling), and p is then a lower
// bound of the full count's, reported only for the record.
func permutationTest(values []float64, o Options, rng *rand.Rand) (tau int, p float64, significant bool) {
	e := newEnergy(values, o.MinSize)
	order := make([]int, len(values))
	for i := range order {
		order[i] = i
	}
	observed, tau := e.best(order)
	// Equal statistics (the same partition in another order) may differ in
	// the last bits of their sums: count them as reaching the observed one.
	reach := observed - 1e-9*math.Max(math.Abs(observed), 1e-300)
	allowed := int(math.Floor(o.Alpha*float64(o.Permutations+1)*(1+1e-9))) - 1
	exceed := 0
	for r := 0; r < o.Permutations; r++ {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		if s, _ := e.best(order); s >= reach {
			exceed++
			if exceed > allowed {
				return tau, float64(1+exceed) / float64(o.Permutations+1), false
			}
		}
	}
	return tau, float64(1+exceed) / float64(o.Permutations+1), true
}
