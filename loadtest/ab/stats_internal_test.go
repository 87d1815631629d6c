package ab

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// uCounts enumerates every placement of n a's and m b's among n+m ranks and
// returns how many placements give each value of U = #{(a, b): a > b}.
func uCounts(n, m int) []int {
	counts := make([]int, n*m+1)
	for mask := uint(0); mask < 1<<(n+m); mask++ {
		if bits.OnesCount(mask) != n {
			continue
		}
		u, bs := 0, 0 // bit r set: rank r is an a
		for r := range n + m {
			if mask&(1<<r) != 0 {
				u += bs
			} else {
				bs++
			}
		}
		counts[u]++
	}
	return counts
}

func TestUCDF_MatchesEnumeration(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for m := 1; m <= 7; m++ {
			counts := uCounts(n, m)
			total, cum := 0, 0
			for _, c := range counts {
				total += c
			}
			cdf := uCDF(n, m)
			require.Len(t, cdf, n*m+1)
			for u, c := range counts {
				cum += c
				assert.InDelta(t, float64(cum)/float64(total), cdf[u], 1e-12, "n=%d m=%d u=%d", n, m, u)
			}
		}
	}
}

func TestMosesRank_MatchesEnumeration(t *testing.T) {
	// Confidences as num/den, so that the brute force decides in integers:
	// P(U ≤ k−1) ≤ (1 − num/den)/2 ⇔ 2·den·count ≤ (den − num)·total.
	for _, conf := range []struct{ num, den int }{{19, 20}, {9, 10}, {99, 100}} {
		for n := 2; n <= 7; n++ {
			for m := 2; m <= 7; m++ {
				counts := uCounts(n, m)
				total := 0
				for _, c := range counts {
					total += c
				}
				want, cum := 0, 0
				for u, c := range counts {
					cum += c
					if 2*conf.den*cum > (conf.den-conf.num)*total {
						break
					}
					want = u + 1
				}
				assert.Equal(t, want, mosesRank(n, m, float64(conf.num)/float64(conf.den)), "n=%d m=%d confidence=%d/%d", n, m, conf.num, conf.den)
			}
		}
	}
}

func TestMosesRank_Textbook(t *testing.T) {
	// k − 1 is the critical value of U in the two-sided 5% table of the
	// Mann-Whitney test; k = 0: no interval of the differences covers 95%.
	for _, tc := range []struct{ n, m, k int }{
		{3, 3, 0},    // the smallest p is 0.1
		{4, 4, 1},    // P(U = 0) = 1/70: [min D, max D]
		{5, 5, 3},    // U critical value 2
		{6, 6, 6},    // 5
		{7, 7, 9},    // 8
		{8, 8, 14},   // 13
		{10, 10, 24}, // 23
		{5, 8, 7},    // 6
	} {
		assert.Equal(t, tc.k, mosesRank(tc.n, tc.m, 0.95), "n=%d m=%d", tc.n, tc.m)
	}
}

func TestMosesRank_NormalApproximation(t *testing.T) {
	// Where the exact distribution is still used, the approximate interval
	// covers at least the confidence asked for, and at most 1 point more.
	for _, n := range []int{20, 35, exactLimit} {
		for _, m := range []int{5, 10, exactLimit} {
			for _, conf := range []float64{0.95, 0.99} {
				k := mosesRankNormal(n, m, conf)
				require.Positive(t, k)
				coverage := 1 - 2*uCDF(n, m)[k-1]
				assert.GreaterOrEqual(t, coverage, conf, "n=%d m=%d confidence=%g", n, m, conf)
				assert.Less(t, coverage, conf+0.01, "n=%d m=%d confidence=%g", n, m, conf)
			}
		}
	}
	assert.Equal(t, mosesRankNormal(exactLimit+1, 5, 0.95), mosesRank(exactLimit+1, 5, 0.95))
}

func TestMinP(t *testing.T) {
	assert.InDelta(t, 0.1, minP(3, 3), 1e-15)
	assert.InDelta(t, 2.0/70, minP(4, 4), 1e-15)
	assert.InDelta(t, 2.0/252, minP(5, 5), 1e-15)
	assert.InDelta(t, 2.0/286, minP(3, 10), 1e-15)
	assert.Equal(t, 5, trialsNeeded(0.01))
	assert.Equal(t, 4, trialsNeeded(0.05))
}

// logNormal returns n draws of median·e^(σ·Z), Z standard normal.
func logNormal(r *rand.Rand, n int, median, sigma float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = median * math.Exp(sigma*r.NormFloat64())
	}
	return xs
}

// answers compares draws pairs of samples of n values, A with median 1 and B
// with median ratio, both log-normal with σ sigma, and counts each answer and
// the Different answers that are Worse for LowerIsBetter.
func answers(seed uint64, draws, n int, ratio, sigma float64) (count map[Answer]int, worse int) {
	r := rand.New(rand.NewPCG(seed, 1))
	count = map[Answer]int{}
	for range draws {
		c := Compare(logNormal(r, n, 1, sigma), logNormal(r, n, ratio, sigma), Rule{})
		count[c.Answer]++
		if c.Worse(LowerIsBetter) {
			worse++
		}
	}
	return count, worse
}

func TestCompare(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tight := []float64{1.00, 1.01, 1.02, 1.03, 1.04}
	for _, tc := range []struct {
		name   string
		a, b   []float64
		rule   Rule
		want   Answer
		reason string // a substring of Reason
	}{
		// B is twice A and the samples do not overlap: p = 2/252 < 0.01.
		{"2x", tight, []float64{2.00, 2.01, 2.02, 2.03, 2.04}, Rule{},
			Different, "p=0.0079 < 0.01 and +98% (95% CI +94.2%…+102%) is beyond the ±5% that matters"},
		// Failure rate from 0 to 20%: no ratio, so raw differences against Absolute.
		{"zero to 0.2", []float64{0, 0, 0, 0, 0}, []float64{0.2, 0.2, 0.2, 0.2, 0.2}, Rule{Absolute: 0.01},
			Different, "+0.2 (95% CI +0.2…+0.2) is beyond the ±0.01 that matters"},
		// NaN and Inf are dropped and the rest is still judged.
		{"non-finite dropped", []float64{1, nan, 1.01, 1.02, 1.03, 1.04}, []float64{2, 2.01, 2.02, 2.03, inf, 2.04}, Rule{},
			Different, "dropped 1 NaN/Inf values of A and 1 of B; p=0.0079 < 0.01"},

		// Same separation and size with 3 trials per arm: p cannot go below 0.1.
		{"2x with 3 trials", tight[:3], []float64{2.00, 2.01, 2.02}, Rule{},
			Inconclusive, "need ≥ 5 trials per arm to detect a difference at α=0.01 (have 3 and 3)"},
		// Significant, but the estimate +4.95% is inside the 5% band while its interval reaches +18%.
		{"significant but small", tight, []float64{1.05, 1.06, 1.07, 1.08, 1.20}, Rule{},
			Inconclusive, "p=0.0079 < 0.01 but +4.95% (95% CI +1.94%…+17.6%) is not clearly beyond the ±5% that matters"},
		// Noisy samples, +10% estimated: neither shown different nor shown the same.
		{"noisy", []float64{1, 1.3, 0.8, 1.1, 0.9}, []float64{1.2, 0.9, 1.4, 1.0, 1.1}, Rule{},
			Inconclusive, "p=0.44 ≥ 0.01 and +10% (95% CI -18.2%…+50%) is not within the ±5% that does not matter"},
		// One failure in five trials against none: with Absolute 0 every failure matters.
		{"one failure", []float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0.01}, Rule{},
			Inconclusive, "p=1 ≥ 0.01 and +0 (95% CI +0…+0.01) is not within the ±0 that does not matter"},
		// A single value per arm says nothing.
		{"one value", []float64{1}, []float64{1, 1, 1}, Rule{},
			Inconclusive, "need ≥ 2 values per arm, have 1 (A) and 3 (B)"},
		// Dropping the NaN and Inf leaves one value of B.
		{"non-finite leaves one", []float64{1, 2, 3}, []float64{nan, 2, inf}, Rule{},
			Inconclusive, "dropped 0 NaN/Inf values of A and 2 of B; need ≥ 2 values per arm, have 3 (A) and 1 (B)"},
		// A Rule outside its range is reported rather than applied.
		{"invalid rule", tight, tight, Rule{Alpha: 1.5},
			Inconclusive, "invalid Rule: Alpha=1.5 must be in (0, 1)"},

		// +1% with the whole interval inside ±5%.
		{"+1%", []float64{1.00, 1.01, 1.02, 1.03, 1.04, 1.05}, []float64{1.01, 1.02, 1.03, 1.04, 1.05, 1.06}, Rule{},
			Same, "+0.976% (95% CI -1.9%…+3.92%) lies within the ±5% that does not matter (p=0.45)"},
		// 0 → 0.2 is significant but below Absolute 0.5.
		{"within Absolute", []float64{0, 0, 0, 0, 0}, []float64{0.2, 0.2, 0.2, 0.2, 0.2}, Rule{Absolute: 0.5},
			Same, "+0.2 (95% CI +0.2…+0.2) lies within the ±0.5 that does not matter (p=0.0079)"},
		// Latency 10.2 ms → 11.2 ms is +10% and significant, but below Absolute 2 ms.
		{"latency below Absolute", []float64{0.0100, 0.0101, 0.0102, 0.0103, 0.0104}, []float64{0.0110, 0.0111, 0.0112, 0.0113, 0.0114}, Rule{Absolute: 0.002},
			Same, "+9.8% (95% CI +6.8%…+12.9%) lies within the ±19.6% that does not matter (p=0.0079)"},
		// No failure on either side.
		{"all zeros", []float64{0, 0, 0, 0, 0}, []float64{0, 0, 0, 0, 0}, Rule{},
			Same, "all values of both arms equal 0"},
		// Identical constants are the same even with too few trials for an interval.
		{"constant, 3 trials", []float64{1, 1, 1}, []float64{1, 1, 1}, Rule{},
			Same, "all values of both arms equal 1"},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			c := Compare(tc.a, tc.b, tc.rule)
			assert.Equal(t, tc.want, c.Answer, c.Reason)
			assert.Contains(t, c.Reason, tc.reason)
		})
	}
}

func TestCompare_Figures(t *testing.T) {
	a := []float64{1.04, 1.00, 1.02, 1.03, 1.01, 1.05}
	b := []float64{2.06, 2.00, 2.04, 2.02, 2.08, 2.10}
	c := Compare(a, b, Rule{})
	require.Equal(t, Different, c.Answer, c.Reason)
	// Neither input is reordered.
	assert.Equal(t, []float64{1.04, 1.00, 1.02, 1.03, 1.01, 1.05}, a)
	// B is exactly 2·A, so every log difference is log 2 plus one of a set
	// symmetric about 0: the Hodges–Lehmann ratio is exactly 2.
	assert.InDelta(t, 2, c.Ratio, 1e-12)
	assert.Less(t, c.RatioLo, 2.0)
	assert.Greater(t, c.RatioHi, 2.0)
	assert.InDelta(t, 1.025, c.Delta, 1e-12) // the median of the 36 b_j − a_i
	assert.Less(t, c.DeltaLo, c.Delta)
	assert.Greater(t, c.DeltaHi, c.Delta)
	// With 6 values the 95% interval of the median is finite: [x(1), x(6)].
	assert.Equal(t, Summary{N: 6, Median: 1.025, Lo: 1.00, Hi: 1.05}, c.A)
	assert.InDelta(t, 2.0/924, c.P, 1e-12)
}

func TestComparison_WorseBetter(t *testing.T) {
	low := []float64{1.00, 1.01, 1.02, 1.03, 1.04}
	high := []float64{2.00, 2.01, 2.02, 2.03, 2.04}
	for _, tc := range []struct {
		name          string
		a, b          []float64
		dir           Direction
		worse, better bool
	}{
		// Latency doubled.
		{"latency rose", low, high, LowerIsBetter, true, false},
		// Latency halved.
		{"latency fell", high, low, LowerIsBetter, false, true},
		// Throughput doubled.
		{"throughput rose", low, high, HigherIsBetter, false, true},
		// Throughput halved.
		{"throughput fell", high, low, HigherIsBetter, true, false},
		// Failure rate from 0 to 0.2: raw differences, no ratio.
		{"failures rose", []float64{0, 0, 0, 0, 0}, []float64{0.2, 0.2, 0.2, 0.2, 0.2}, LowerIsBetter, true, false},
		// Not Different: neither worse nor better.
		{"same", low, low, LowerIsBetter, false, false},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			c := Compare(tc.a, tc.b, Rule{Absolute: 0.01})
			assert.Equal(t, tc.worse, c.Worse(tc.dir), c.Reason)
			assert.Equal(t, tc.better, c.Better(tc.dir), c.Reason)
		})
	}
}

// testSize returns the probability that samples of n values from one
// distribution give p < alpha: the size of the U test, ≤ alpha.
func testSize(n int, alpha float64) float64 {
	size := 0.0
	for _, p := range uCDF(n, n) {
		if 2*p >= alpha {
			break
		}
		size = 2 * p
	}
	return size
}

// TestCompare_AAFalseDifferentRate checks that two samples of one
// distribution are answered Different at a rate ≤ Alpha = 0.01.
func TestCompare_AAFalseDifferentRate(t *testing.T) {
	// The exact sizes, 0.79% (n=5) and 0.70% (n=8), are near 1%: 20,000 draws
	// keep the measured rate within 1% by > 3 standard errors, for any seed.
	const draws = 20_000
	for _, n := range []int{5, 8} {
		t.Run(fmt.Sprintf("n=%d", n), func(t *testing.T) {
			count, worse := answers(1, draws, n, 1, 0.3)
			rate := float64(count[Different]) / draws
			t.Logf("A/A log-normal σ=0.3, n=%d: %d of %d different (%.2f%%, %d of them worse), exact size of the test %.2f%%; %v",
				n, count[Different], draws, 100*rate, worse, 100*testSize(n, 0.01), count)
			assert.LessOrEqual(t, rate, 0.01)
		})
	}
}

// TestCompare_Power checks how often a real change is found, and a negligible
// one answered Same, with log-normal trials.
func TestCompare_Power(t *testing.T) {
	const draws = 1000
	for _, tc := range []struct {
		n            int
		ratio, sigma float64
		want         Answer
		atLeast      float64 // fraction of draws answered want
	}{
		// A 2× regression with 5 trials per arm is caught essentially always.
		{5, 2, 0.1, Different, 0.99},
		// +20% with 8 trials per arm.
		{8, 1.2, 0.05, Different, 0.95},
		// +1% is inside the 5% band.
		{10, 1.01, 0.005, Same, 0.95},
		// At the A/A noise (σ 0.3), 5 trials catch 2× only about half the
		// time and 10 trials nearly always.
		{5, 2, 0.3, Different, 0.4},
		{10, 2, 0.3, Different, 0.9},
	} {
		t.Run(fmt.Sprintf("n=%d/ratio=%g/sigma=%g", tc.n, tc.ratio, tc.sigma), func(t *testing.T) {
			count, worse := answers(2, draws, tc.n, tc.ratio, tc.sigma)
			rate := float64(count[tc.want]) / draws
			t.Logf("%s in %.1f%% of %d draws; %v", tc.want, 100*rate, draws, count)
			assert.GreaterOrEqual(t, rate, tc.atLeast)
			assert.Equal(t, count[Different], worse, "every Different answer is Worse(LowerIsBetter)")
		})
	}
}

func TestCompare_ThreeTrialsNeverDifferent(t *testing.T) {
	// Even a tenfold change in 3 trials per arm cannot give p < 0.01.
	r := rand.New(rand.NewPCG(3, 1))
	for range 200 {
		c := Compare(logNormal(r, 3, 1, 0.01), logNormal(r, 3, 10, 0.01), Rule{})
		require.Equal(t, Inconclusive, c.Answer)
		require.InDelta(t, 0.1, c.P, 1e-12)
		require.Contains(t, c.Reason, "need ≥ 5 trials per arm to detect a difference at α=0.01")
	}
}

func ExampleCompare() {
	base := []float64{0.101, 0.098, 0.103, 0.099, 0.100} // CPU-seconds per request, arm A
	head := []float64{0.205, 0.199, 0.202, 0.196, 0.210} // arm B
	c := Compare(base, head, Rule{})
	fmt.Println(c.Answer, c.Worse(LowerIsBetter))
	fmt.Println(c.Reason)
	// Output:
	// different true
	// p=0.0079 < 0.01 and +102% (95% CI +94.1%…+110%) is beyond the ±5% that matters
}

func TestHolm(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		ps, adj []float64
	}{
		// One hypothesis: no correction.
		{"one", []float64{0.03}, []float64{0.03}},
		// Sorted 0.01, 0.02, 0.04 get ×3, ×2, ×1: 0.03, 0.04, 0.04 (held
		// up to the one before, so adjusted p-values never fall).
		{"three", []float64{0.04, 0.01, 0.02}, []float64{0.04, 0.03, 0.04}},
		// Bonferroni's ×m caps at 1.
		{"capped", []float64{0.5, 0.6}, []float64{1, 1}},
		// A p-value not computed counts as 1 and still counts in m.
		{"nan", []float64{0.001, nan}, []float64{0.002, 1}},
		// Ties are adjusted alike: 0.0079 of five trials among 13 figures.
		{"ties", []float64{0.0079, 0.0079, 0.5}, []float64{0.0237, 0.0237, 0.5}},
		// No hypotheses.
		{"none", nil, []float64{}},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			got := holm(tc.ps)
			require.Len(t, got, len(tc.adj))
			for i := range got {
				assert.InDelta(t, tc.adj[i], got[i], 1e-12, "p[%d]=%g", i, tc.ps[i])
			}
		})
	}
}

func TestFamilyTrialsNeeded(t *testing.T) {
	for _, tc := range []struct{ m, n int }{
		{1, 5},  // 0.0079 < 0.05
		{6, 5},  // 6 × 0.0079 = 0.048
		{7, 6},  // 7 × 0.0079 = 0.056; 7 × 0.0022 = 0.015
		{23, 6}, // 23 × 0.0022 = 0.0498
		{24, 7}, // 24 × 0.0022 = 0.052
		{0, 5},  // no figure: as for one
	} {
		assert.Equal(t, tc.n, familyTrialsNeeded(tc.m, 0.05), "m=%d", tc.m)
	}
}
