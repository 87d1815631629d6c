package changepoint

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// noise describes the synthetic nights of the calibration: each value is
// base × exp(N(0, sigma)), and a share of the nights is multiplied by
// U(1.3, 1.6) — a noisy neighbour on the shared machine.
type noise struct {
	sigma    float64
	outliers float64 // share of nights with a noisy neighbour
}

var (
	p95Noise = noise{sigma: 0.08, outliers: 0.03} // p95-like figures
	cpuNoise = noise{sigma: 0.03}                 // CPU-per-request-like figures
)

// series returns n nights of base 100 with the given noise, each night
// multiplied by shape(i) (1 when shape is nil), from the generator seed.
func (nz noise) series(seed uint64, n int, shape func(i int) float64) []float64 {
	rng := rand.New(rand.NewPCG(splitmix64(seed), splitmix64(seed^0x5eed)))
	out := make([]float64, n)
	for i := range out {
		v := 100 * math.Exp(nz.sigma*rng.NormFloat64())
		if rng.Float64() < nz.outliers {
			v *= 1.3 + 0.3*rng.Float64()
		}
		if shape != nil {
			v *= shape(i)
		}
		out[i] = v
	}
	return out
}

// runs is the number of series of each calibration check: 200, or 50 under
// -short.
func runs() int {
	if testing.Short() {
		return 50
	}
	return 200
}

// falseAlarms counts the change points and trends found in noise-only
// series of 30 nights.
func falseAlarms(t *testing.T, nz noise, o Options, seedBase uint64) (changes, trends, series int) {
	t.Helper()
	for s := range runs() {
		a, err := Analyze(nz.series(seedBase+uint64(s), 30, nil), o)
		if err != nil {
			t.Fatal(err)
		}
		changes += len(a.Changes)
		trends += len(a.Trends)
	}
	return changes, trends, runs()
}

func step(at int, ratio float64) func(int) float64 {
	return func(i int) float64 {
		if i >= at {
			return ratio
		}
		return 1
	}
}

func creep(perStep float64) func(int) float64 {
	return func(i int) float64 { return math.Pow(1+perStep, float64(i)) }
}

// TestCalibration measures the false alarms and the power of the default
// Options on synthetic nights like the A/B runs' own spread. The figures
// are printed with -v; the package comment quotes them.
func TestCalibration(t *testing.T) {
	t.Run("FalseAlarms", func(t *testing.T) {
		for _, c := range []struct {
			name string
			nz   noise
			seed uint64
		}{
			{"sigma0.08+outliers", p95Noise, 1_000},
			{"sigma0.03", cpuNoise, 2_000},
		} {
			changes, trends, n := falseAlarms(t, c.nz, Options{}, c.seed)
			t.Logf("%s: false change points: %d in %d series of 30 nights; false trends: %d", c.name, changes, n, trends)
			// At most 2 in 200 series (under -short, 2 in 50).
			if changes > 2 {
				t.Errorf("%s: %d false change points in %d series, want at most 2", c.name, changes, n)
			}
			if trends > 2 {
				t.Errorf("%s: %d false trends in %d series, want at most 2", c.name, trends, n)
			}
		}
	})

	// The brief asked for 95% within ±1 night. Under this noise that is
	// out of reach of any estimate of the location: the split maximising
	// Q̂, significant or not, lands within ±1 night in 95.2% of 4,000
	// series (TestLongRun), and least squares, least absolute deviations
	// and Huber fits did no better in trials (an outlier ×1.3–1.6 two
	// nights before a ×1.3 step looks like the step's first night). At
	// the default Alpha a change is found in 97.1% of those series and
	// within ±1 night in 92.7%; the bounds below leave room for the
	// sampling spread of 200 series (±1.8%).
	t.Run("Power", func(t *testing.T) {
		within1, within2, detected, other, located := 0, 0, 0, 0, 0
		n := runs()
		for s := range n {
			at := 5 + rand.New(rand.NewPCG(splitmix64(uint64(s)), 0xa7)).IntN(21) // uniform in [5, 25]
			series := p95Noise.series(3_000+uint64(s), 30, step(at, 1.3))
			a, err := Analyze(series, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tau := bestSplit(series); tau >= at-1 && tau <= at+1 {
				located++
			}
			best := math.MaxInt
			for _, c := range a.Changes {
				d := c.Index - at
				if d < 0 {
					d = -d
				}
				if d > 2 {
					other++
				}
				best = min(best, d)
			}
			if best <= 1 {
				within1++
			}
			if best <= 2 {
				within2++
			}
			if len(a.Changes) > 0 {
				detected++
			}
		}
		t.Logf("power ×1.3 (sigma 0.08 + outliers, 30 nights, step at 5–25): %d/%d within ±1 night, %d/%d within ±2, %d/%d with a change anywhere; %d change points more than 2 nights off",
			within1, n, within2, n, detected, n, other)
		t.Logf("location ceiling: the best split, significant or not, is within ±1 night in %d/%d", located, n)
		if want := (90*n + 99) / 100; within1 < want {
			t.Errorf("×1.3 step found within ±1 night in %d/%d series, want at least %d", within1, n, want)
		}
		if want := (93*n + 99) / 100; within2 < want {
			t.Errorf("×1.3 step found within ±2 nights in %d/%d series, want at least %d", within2, n, want)
		}
	})

	// A step in 10 points: at the default Alpha no permutation test can
	// confirm it (the smallest p-value of a 5|5 split is 2/252), so the
	// short-series checks run at Alpha = shortAlpha.
	short := Options{Alpha: shortAlpha}

	t.Run("Creep", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			nz     noise
			points int
			o      Options
		}{
			{"10 points, sigma 0.03, default Alpha", cpuNoise, 10, Options{}},
			{"10 points, sigma 0.03, Alpha 0.02", cpuNoise, 10, short},
			{"30 points, sigma 0.03", cpuNoise, 30, Options{}},
			{"30 points, sigma 0.08 + outliers", p95Noise, 30, Options{}},
		} {
			trend, asStep, n := creepRuns(t, runs(), c.nz, c.points, c.o, analyzeWithCheck)
			t.Logf("creep +3%%/step, %s: trend with PerStep in 1.5–4.5%% in %d/%d; reported as a step in %d/%d", c.name, trend, n, asStep, n)
			if want := (90*n + 99) / 100; trend < want {
				t.Errorf("%s: creep reported as a trend in %d/%d series, want at least %d", c.name, trend, n, want)
			}
			if limit := n / 10; asStep > limit {
				t.Errorf("%s: creep reported as a step in %d/%d series, want at most %d", c.name, asStep, n, limit)
			}
		}
	})

	t.Run("Step10", func(t *testing.T) {
		for _, c := range []struct {
			name string
			o    Options
			want int // percent
		}{{"default Alpha", Options{}, 0}, {"Alpha 0.02", short, 95}} {
			found, other, n := 0, 0, runs()
			for s := range n {
				a, err := Analyze(cpuNoise.series(5_000+uint64(s), 10, step(5, 1.5)), c.o)
				if err != nil {
					t.Fatal(err)
				}
				for _, ch := range a.Changes {
					if ch.Index == 5 {
						found++
					} else {
						other++
					}
				}
			}
			t.Logf("step ×1.5 at 5 of 10 points, sigma 0.03, %s: found at 5 in %d/%d; %d other change points", c.name, found, n, other)
			if c.want == 0 && found != 0 {
				t.Errorf("%s: step found in %d/%d series; no permutation test can confirm it below p=2/252", c.name, found, n)
			}
			if want := (c.want*n + 99) / 100; found < want {
				t.Errorf("%s: step found at 5 in %d/%d series, want at least %d", c.name, found, n, want)
			}
		}
	})

	// The checks above can fail: with a careless Alpha the false alarms
	// flood in, and without the step-against-line check a creep turns
	// into steps.
	t.Run("NotVacuous", func(t *testing.T) {
		changes, _, n := falseAlarms(t, p95Noise, Options{Alpha: 0.5, Permutations: 99}, 1_000)
		t.Logf("with Alpha 0.5 (99 permutations): false change points: %d in %d series of 30 nights", changes, n)
		if changes < n/4 {
			t.Errorf("with Alpha 0.5, %d false change points in %d series; the false-alarm bound of 2 would not be exceeded", changes, n)
		}
		// 50 series are plenty to show it, and a chain of steps is slow.
		_, asStep, m := creepRuns(t, 50, cpuNoise, 30, Options{}, analyzeWithoutCheck)
		t.Logf("without the step-against-line check: creep +3%%/step over 30 nights reported as a step in %d/%d", asStep, m)
		if asStep < m/2 {
			t.Errorf("without the step-against-line check, creep reported as a step in only %d/%d series", asStep, m)
		}
	})
}

// bestSplit returns the split of the whole series that maximises Q̂,
// whatever its significance.
func bestSplit(series []float64) int {
	logs := make([]float64, len(series))
	order := make([]int, len(series))
	for i, v := range series {
		logs[i] = math.Log(v)
		order[i] = i
	}
	_, tau := newEnergy(logs, DefaultMinSize).best(order)
	return tau
}

// shortAlpha is the Alpha of the 10-point checks.
const shortAlpha = 0.02

func analyzeWithCheck(s []float64, o Options) (Analysis, error)    { return analyze(s, o, true) }
func analyzeWithoutCheck(s []float64, o Options) (Analysis, error) { return analyze(s, o, false) }

// creepRuns counts, over count series of n points creeping +3% a step with
// the given noise, those reported as a trend with PerStep in 1.5–4.5% and those
// reported with a change point.
func creepRuns(t *testing.T, count int, nz noise, n int, o Options, analyse func([]float64, Options) (Analysis, error)) (trend, asStep, series int) {
	t.Helper()
	for s := range count {
		a, err := analyse(nz.series(4_000+uint64(s), n, creep(0.03)), o)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Changes) > 0 {
			asStep++
		}
		for _, tr := range a.Trends {
			if tr.PerStep >= 0.015 && tr.PerStep <= 0.045 {
				trend++
				break
			}
		}
	}
	return trend, asStep, count
}

// TestLongRun measures the long-run rates the package comment quotes, over
// 4,000 series of each kind. It takes a few seconds, so it runs only when
// CHANGEPOINT_LONG_RUN is set.
func TestLongRun(t *testing.T) {
	if os.Getenv("CHANGEPOINT_LONG_RUN") == "" {
		t.Skip("set CHANGEPOINT_LONG_RUN=1 to measure the long-run rates")
	}
	const n = 4_000
	for _, c := range []struct {
		name string
		nz   noise
	}{{"sigma 0.08 + outliers", p95Noise}, {"sigma 0.03", cpuNoise}} {
		changes, trends := 0, 0
		for s := range n {
			a, err := Analyze(c.nz.series(100_000+uint64(s), 30, nil), Options{})
			if err != nil {
				t.Fatal(err)
			}
			changes += len(a.Changes)
			trends += len(a.Trends)
		}
		t.Logf("%s: false change points %.2f%% per series, false trends %.2f%% (%d series of 30 nights)", c.name, 100*float64(changes)/n, 100*float64(trends)/n, n)
	}
	within1, within2, detected, located := 0, 0, 0, 0
	for s := range n {
		at := 5 + rand.New(rand.NewPCG(splitmix64(uint64(s)+100_000), 0xa7)).IntN(21)
		series := p95Noise.series(200_000+uint64(s), 30, step(at, 1.3))
		a, err := Analyze(series, Options{})
		if err != nil {
			t.Fatal(err)
		}
		best := math.MaxInt
		for _, c := range a.Changes {
			best = min(best, max(c.Index-at, at-c.Index))
		}
		if best <= 1 {
			within1++
		}
		if best <= 2 {
			within2++
		}
		if len(a.Changes) > 0 {
			detected++
		}
		if tau := bestSplit(series); tau >= at-1 && tau <= at+1 {
			located++
		}
	}
	t.Logf("×1.3 step (sigma 0.08 + outliers): found %.1f%%, within ±1 night %.1f%%, within ±2 %.1f%%; best split within ±1 night, significant or not, %.1f%% (%d series)",
		100*float64(detected)/n, 100*float64(within1)/n, 100*float64(within2)/n, 100*float64(located)/n, n)
}
