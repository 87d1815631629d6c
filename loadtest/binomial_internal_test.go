package loadtest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The binomial tail against exact sums (Python's fractions): small and
// large counts, both ends.
func TestBinomialTail(t *testing.T) {
	for _, tc := range []struct {
		k, n int64
		p    float64
		want float64
	}{
		{8, 50, 0.15, 0.48124785135627823},
		{9, 50, 0.15, 0.33189927531076613},
		{1, 50, 0.005, 0.22168744293135792},
		{250, 1000, 0.15, 1.2386992159406227e-16},
		{1600, 10000, 0.15, 0.00284496932776657},
		{10, 10, 0.3, 5.9049e-06},
		{0, 10, 0.3, 1},
		{11, 10, 0.3, 0},
	} {
		got := binomialTail(tc.k, tc.n, tc.p)
		assert.InDelta(t, 0, math.Abs(got-tc.want)/math.Max(tc.want, 1e-300), 1e-6, "P(X ≥ %d | %d, %g) = %g, want %g", tc.k, tc.n, tc.p, got, tc.want)
	}
}
