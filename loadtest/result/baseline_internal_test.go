package result

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// synthetic builds a result with one step per level, the kind "get" with
// 5,000 log-normal-ish latencies scaled by scale[i] and the given 5xx rate.
func synthetic(levels []float64, scale []float64, errRate float64, capacity float64, env Environment) *Result {
	return syntheticN(5000, 1, levels, scale, errRate, capacity, env)
}

func syntheticN(n int, seed uint64, levels []float64, scale []float64, errRate float64, capacity float64, env Environment) *Result {
	return syntheticDist(n, seed, levels, scale, errRate, capacity, env, func(r *rand.Rand) float64 { return 0.5 + r.ExpFloat64() })
}

// syntheticDist is syntheticN with latencies of 10 ms × scale × draw(r).
func syntheticDist(n int, seed uint64, levels []float64, scale []float64, errRate float64, capacity float64, env Environment, draw func(*rand.Rand) float64) *Result {
	res := &Result{Schema: SchemaVersion, Scenario: "TestX/sub", Environment: env, Capacity: capacity, Verdict: Pass, Model: "arrivals",
		Plan: PlanInfo{Type: "ladder"}}
	r := rand.New(rand.NewPCG(seed, 2))
	for i, lvl := range levels {
		h := NewHistogram()
		outcomes := map[Outcome]int64{}
		for range n {
			d := time.Duration(float64(10*time.Millisecond) * scale[i] * draw(r))
			o := OK
			if r.Float64() < errRate {
				o = HTTP5xx
			}
			outcomes[o]++
			h.RecordValue(max(int64(d/time.Microsecond), HistogramMin))
		}
		k := NewKindResult("get", h)
		k.Outcomes, k.Bytes = outcomes, 10*int64(n)
		start := time.Date(2026, 11, 30, 0, i, 0, 0, time.UTC)
		res.Steps = append(res.Steps, &StepResult{
			Index: i, Step: Step{Level: lvl, Hold: time.Minute}, Start: start, End: start.Add(time.Minute),
			Kinds: []*KindResult{k}, Verdict: Pass,
		})
	}
	return res
}

var env = Environment{CPUModel: "AMD EPYC", Cores: 2, Host: "h1", System: System{Backend: "docker", CPUs: 1, Memory: 512 << 20}}

// newBaseline is NewBaseline for tests.
func newBaseline(t *testing.T, tol Tolerances, runs ...*Result) *Baseline {
	t.Helper()
	b, err := NewBaseline(tol, runs...)
	require.NoError(t, err)
	return b
}

func TestBaselineComparison(t *testing.T) {
	levels := []float64{100, 200, 400}
	base := newBaseline(t, Tolerances{}, synthetic(levels, []float64{1, 1, 1}, 0.001, 400, env))
	otherHost := env
	otherHost.Host = "h2"
	otherClass := Environment{CPUModel: "Apple M4", Cores: 8, Host: "h3", System: env.System}
	for _, tc := range []struct {
		name        string
		res         *Result
		regress     []string // substrings, one per expected regression
		skipped     string
		notCompared string // a substring of NotCompared
	}{
		// The same figures: nothing to report.
		{"same", synthetic(levels, []float64{1, 1, 1}, 0.001, 400, env), nil, "", ""},
		// ±5% noise on latency and capacity is tolerated.
		{"noise", synthetic(levels, []float64{1.05, 0.95, 1.05}, 0.001, 380, env), nil, "", ""},
		// p95 doubles at the top level: p95 and p99 regress there.
		{"2x p95", synthetic(levels, []float64{1, 1, 2}, 0.001, 400, env), []string{"level 400: get p95 rose", "level 400: get p99 rose"}, "", ""},
		// Capacity drops by 20%.
		{"capacity -20%", synthetic(levels, []float64{1, 1, 1}, 0.001, 320, env), []string{"capacity dropped to 320, below the 400–400"}, "", ""},
		// 5xx rises from 0.1% to 5% at every level.
		{"errors", synthetic(levels, []float64{1, 1, 1}, 0.05, 400, env), []string{"level 100: get http_5xx rate rose", "level 200", "level 400"}, "", ""},
		// Another plan: not compared.
		{"other plan", func() *Result {
			r := synthetic(levels, []float64{1, 1, 1}, 0.001, 400, env)
			r.Plan = PlanInfo{Type: "knee", Knee: &KneeParams{Start: 1}}
			return r
		}(), nil, "the plan differs", ""},
		// Another host of the same class: latency three times slower is
		// not a regression (another host's latency says nothing), but the
		// capacity still compares.
		{"other host", synthetic(levels, []float64{3, 3, 3}, 0.001, 320, otherHost), []string{"capacity dropped"}, "", `latency: the baseline was recorded on host "h1", this run is on "h2"`},
		// Another machine class: neither latency nor capacity compare, and
		// NotCompared says which fields differ...
		{"other class", synthetic(levels, []float64{3, 3, 3}, 0.001, 100, otherClass), nil, "", `cpu_model: "AMD EPYC" ≠ "Apple M4"; cores: "2" ≠ "8"`},
		// ...but correctness does.
		{"other class, errors", synthetic(levels, []float64{3, 3, 3}, 0.05, 100, otherClass), []string{"level 100: get http_5xx", "level 200", "level 400"}, "", "correctness compared"},
		// A run with an invalid step: its lower capacity may be the
		// harness's — no regression, and no pass either (inconclusive).
		{"invalid step", func() *Result {
			r := synthetic(levels, []float64{1, 1, 1}, 0.001, 200, env)
			r.Steps[2].Verdict, r.Steps[2].Self.Reasons = Invalid, []string{"the generator used 95% of its cores"}
			return r
		}(), nil, "", ""},
		// The target killed mid-hold, blamed on the harness: step 2
		// invalid with 44% failures, capacity 400 → 100. Once "no
		// regression (capacity 400–400 → 100)".
		{"killed, invalid", func() *Result {
			r := synthetic(levels[:2], []float64{1, 1}, 0.001, 100, env)
			r.Steps[1].Kinds[0].Outcomes[TransportError] = 4000
			r.Steps[1].Verdict, r.Steps[1].Self.Reasons = Invalid, []string{"harness fault: Docker's userland proxy exited"}
			return r
		}(), nil, "", ""},
		// The target went down in step 2, seen as such: a regression.
		{"down", func() *Result {
			r := synthetic(levels[:2], []float64{1, 1}, 0.001, 100, env)
			r.Steps[1].Verdict, r.Steps[1].Down = Fail, true
			r.Steps[1].Violations = []string{"system under test down: relay stopped unexpectedly (exit code 137)"}
			return r
		}(), []string{"level 200: the system under test went down: system under test down: relay stopped unexpectedly (exit code 137)", "capacity dropped to 100"}, "", ""},
	} {
		inconclusive := map[string][]string{
			"invalid step":    {"step 3 (level 400) is invalid: the generator used 95% of its cores", "capacity dropped to 200, below the 400–400 the baseline's 1 run(s) reached (-50%, tolerance 10%), beside an invalid or incomplete step"},
			"killed, invalid": {"step 2 (level 200) is invalid: harness fault", "capacity dropped to 100"},
		}[tc.name]
		t.Run("case="+tc.name, func(t *testing.T) {
			c := base.Compare(tc.res)
			require.Len(t, c.Inconclusive, len(inconclusive), "%q", c.Inconclusive)
			for i, want := range inconclusive {
				assert.Contains(t, c.Inconclusive[i], want)
			}
			assert.Equal(t, tc.skipped == "" && len(tc.regress) == 0 && len(inconclusive) == 0, c.Held(), "held")
			assert.Contains(t, c.Skipped, tc.skipped)
			require.Len(t, c.Regressions, len(tc.regress), "%q", c.Regressions)
			for i, want := range tc.regress {
				assert.Contains(t, c.Regressions[i], want)
			}
			if tc.skipped == "" {
				assert.Positive(t, c.Compared)
			}
			if tc.notCompared != "" {
				assert.Contains(t, strings.Join(c.NotCompared, "\n"), tc.notCompared)
			}
		})
	}
}

// A -short baseline records correctness only: latency three times slower
// is no regression, 5xx at 5% instead of 0.1% is.
func TestBaselineShortIsCorrectnessOnly(t *testing.T) {
	levels := []float64{20, 40}
	short := func(scale, errRate float64) *Result {
		r := synthetic(levels, []float64{scale, scale}, errRate, 40, env)
		r.Short = true
		return r
	}
	base := newBaseline(t, Tolerances{}, short(1, 0.001))
	assert.True(t, base.Short)
	assert.Nil(t, base.Steps[0].Kinds[0].P95, "no latency is recorded")
	c := base.Compare(short(3, 0.001))
	assert.Empty(t, c.Regressions)
	assert.Contains(t, strings.Join(c.NotCompared, "\n"), "latency: a -short baseline records correctness only")
	c = base.Compare(short(3, 0.05))
	assert.Len(t, c.Regressions, 2, "%q", c.Regressions)
}

// A baseline of several runs keeps their spread: a run inside it (plus the
// tolerance) passes where a one-run baseline of the same commit flags it.
func TestBaselineSpreadOfSeveralRuns(t *testing.T) {
	levels := []float64{100}
	run := func(scale float64, capacity float64, seed uint64) *Result {
		return syntheticN(5000, seed, levels, []float64{scale}, 0.001, capacity, env)
	}
	now := run(1.45, 100, 9)
	one := newBaseline(t, Tolerances{}, run(1, 100, 1))
	assert.Len(t, one.Compare(now).Regressions, 2, "1.45x is beyond 1x + 25%%")
	three := newBaseline(t, Tolerances{}, run(1, 100, 1), run(1.3, 100, 2), run(0.9, 100, 3))
	assert.Equal(t, 3, three.Runs)
	p95 := three.Steps[0].Kinds[0].P95
	assert.Less(t, p95.Min, p95.Max, "the spread is kept")
	assert.Empty(t, three.Compare(now).Regressions, "1.45x is within 1.3x + 25%%")
	assert.Len(t, three.Compare(run(2, 100, 4)).Regressions, 2, "2x is beyond the spread")
	// Capacity: the lowest of the runs is the reference.
	capRuns := newBaseline(t, Tolerances{}, run(1, 100, 1), run(1, 80, 2))
	assert.Equal(t, Range{Min: 80, Max: 100}, capRuns.Capacity)
	assert.Empty(t, capRuns.Compare(run(1, 75, 5)).Regressions, "75 is within 10% of 80")
	assert.Len(t, capRuns.Compare(run(1, 70, 5)).Regressions, 1)
}

// A baseline holds at each level the figures of the runs that passed it:
// a run that failed the top level adds nothing there, and the baseline
// says which steps it left out.
func TestBaselineHoldsOnlyPassedLevels(t *testing.T) {
	levels := []float64{100, 200}
	ok := synthetic(levels, []float64{1, 1}, 0.001, 200, env)
	failed := synthetic(levels, []float64{1, 8}, 0.2, 100, env) // the top level 8x slower, 20% errors
	failed.Steps[1].Verdict, failed.Verdict = Fail, Fail
	b := newBaseline(t, Tolerances{}, ok, failed)
	assert.Equal(t, []string{"run 2, level 200: fail"}, b.LeftOut)
	assert.Equal(t, Range{Min: 100, Max: 200}, b.Capacity, "the capacity's spread is the runs'")
	top := b.step(200)
	require.NotNil(t, top)
	assert.Equal(t, top.Kinds[0].P95.Min, top.Kinds[0].P95.Max, "one run's p95 at 200")
	assert.Less(t, top.Kinds[0].P95.Max, 2*ok.Steps[1].Kinds[0].Latency.P95, "the failed run's 8x latency is not the figure to hold")
	assert.Less(t, top.Kinds[0].Rates[HTTP5xx].Max, 0.01, "nor its 20% errors")
	assert.Greater(t, b.step(100).Kinds[0].Rates[HTTP5xx].Max, 0.1, "both runs passed 100: the spread holds both")
}

func TestNewBaselineRefusesMixedRuns(t *testing.T) {
	levels := []float64{100}
	a := synthetic(levels, []float64{1}, 0, 100, env)
	for _, tc := range []struct {
		name   string
		change func(r *Result)
		want   string
	}{
		// Another scenario.
		{"scenario", func(r *Result) { r.Scenario = "TestY" }, `run 2 is of scenario "TestY"`},
		// Another plan.
		{"plan", func(r *Result) { r.Plan = PlanInfo{Type: "knee"} }, "run 2 has another plan"},
		// Another machine class.
		{"class", func(r *Result) { r.Environment.Cores = 64 }, "another environment class"},
		// A -short run with a full one.
		{"short", func(r *Result) { r.Short = true }, "not both -short"},
		// An interrupted run.
		{"partial", func(r *Result) { r.Partial = true }, "run 2 is incomplete"},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			b := synthetic(levels, []float64{1}, 0, 100, env)
			tc.change(b)
			_, err := NewBaseline(Tolerances{}, a, b)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := NewBaseline(Tolerances{})
	assert.ErrorContains(t, err, "no run")
}

// Small steps do not flap: runs of the same long-tailed latency (the
// calibrated upstream's log-normal, sigma 1.4) and the same 8% tool errors,
// ~170 requests a level as in a short smoke run, never regress against each
// other; the same comparison over 5,000 requests a level catches a 2x rise.
func TestBaselineSmallSamplesAreNotRegressions(t *testing.T) {
	levels := []float64{10, 20, 40}
	lognormal := func(r *rand.Rand) float64 { return math.Exp(1.4 * r.NormFloat64()) }
	same := []float64{1, 1, 1}
	base := newBaseline(t, Tolerances{}, syntheticDist(170, 1, levels, same, 0.08, 40, env, lognormal))
	for seed := uint64(2); seed < 52; seed++ {
		c := base.Compare(syntheticDist(170, seed, levels, same, 0.08, 40, env, lognormal))
		require.Empty(t, c.Regressions, "seed %d", seed)
	}
	base = newBaseline(t, Tolerances{}, syntheticDist(5000, 1, levels, same, 0.08, 40, env, lognormal))
	c := base.Compare(syntheticDist(5000, 9, levels, []float64{2, 2, 2}, 0.08, 40, env, lognormal))
	assert.Len(t, c.Regressions, 6, "p95 and p99 at every level: %q", c.Regressions)
}

func TestBaselineFileRoundTripAndMissing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "baselines", "TestX", "sub.json")
	res := synthetic([]float64{100}, []float64{1}, 0, 100, env)
	c, err := CompareWithBaseline(res, path)
	require.NoError(t, err)
	assert.True(t, c.Missing, "a missing baseline is reported, not an error")

	require.NoError(t, newBaseline(t, Tolerances{Latency: 0.5}, res).WriteFile(path))
	b, err := ReadBaseline(path)
	require.NoError(t, err)
	assert.Equal(t, 0.5, b.Tolerances.Latency, "tolerances kept")
	assert.Equal(t, 0.10, b.Tolerances.Capacity, "defaults filled")
	c, err = CompareWithBaseline(res, path)
	require.NoError(t, err)
	assert.Empty(t, c.Regressions)
	assert.False(t, c.Missing)

	// A baseline from before spreads were kept is refused with the fix.
	old := filepath.Join(dir, "old.json")
	require.NoError(t, os.WriteFile(old, []byte(`{"schema": 1, "capacity": 200}`), 0o644))
	_, err = ReadBaseline(old)
	assert.ErrorContains(t, err, "rewrite it with -loadtest.update")
}

func TestResultRoundTrip(t *testing.T) {
	res := synthetic([]float64{100, 200}, []float64{1, 2}, 0.01, 200, env)
	res.Provenance = Provenance{Commit: "abc", Command: "go test ./x", Args: []string{"x.test"}}
	res.Steps[0].Resources = []SeriesSummary{{Component: "relay", Metric: "cpu", Unit: "cores", Mean: 0.2, Max: 0.3, Samples: 4}}
	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, res.WriteFile(path))
	got, err := ReadResult(path)
	require.NoError(t, err)
	assert.Equal(t, res.Capacity, got.Capacity)
	assert.Equal(t, res.Provenance, got.Provenance)
	assert.Equal(t, res.Steps[0].Resources, got.Steps[0].Resources)
	for i := range res.Steps {
		want, have := res.Steps[i].Kind("get"), got.Steps[i].Kind("get")
		assert.Equal(t, want.Outcomes, have.Outcomes)
		assert.Equal(t, want.Latency, have.Latency)
		// The HDR snapshot decodes back to the same distribution.
		for _, p := range []float64{50, 99, 99.9} {
			assert.Equal(t, want.Percentile(p), have.Percentile(p), "p%v", p)
		}
		assert.Equal(t, want.Answered(), have.Answered())
	}
}

func TestMarkdownReport(t *testing.T) {
	res := synthetic([]float64{3000, 9281}, []float64{1, 2}, 0.0, 3000, env)
	res.Model = "users"
	res.Provenance.Command = "go test -tags load -run TestX ./loadtest/scenarios"
	res.Steps[0].Resources = []SeriesSummary{{Component: "relay", Metric: "cpu", Mean: 0.22}, {Component: "relay", Metric: "memory", Max: 272 << 20},
		{Component: "host", Metric: "cpu_busy", Unit: "cores", Mean: 0.5}} // the host's: no column
	res.Steps[1].Verdict = Fail
	res.Steps[1].Violations = []string{"p95 of get < 15s: measured 17s"}
	res.Decide()
	md := res.Markdown()
	assert.Contains(t, md, "**fail** — capacity **3,000 users**; first failure at 9,281")
	assert.Contains(t, md, "```sh\ngo test -tags load -run TestX ./loadtest/scenarios\n```")
	assert.Contains(t, md, "| Users | Requests/s | Median | 95% | 99% | Errors | relay CPU / memory | Result |")
	assert.Contains(t, md, "| 3,000 | ")
	assert.Contains(t, md, "| 0.22 cores / 272MiB | pass |", "CPU in cores, never cores ×100 as a percent")
	assert.Contains(t, md, "| breach — p95 of get < 15s: measured 17s |")
	assert.Contains(t, md, "step 2 (level 9281): p95 of get < 15s: measured 17s")

	// What a comparison left out is in the report, not only in a log line.
	res.Baseline = &Comparison{Path: "baseline.json", Compared: 12, NotCompared: []string{"latency: the baseline was recorded on host \"h1\""}}
	md = res.Markdown()
	assert.Contains(t, md, "No regression against baseline.json (12 figures compared).")
	assert.Contains(t, md, "- not compared: latency: the baseline was recorded on host \"h1\"")
	res.Baseline = &Comparison{Path: "baseline.json", Skipped: "the plan differs from the baseline's"}
	assert.Contains(t, res.Markdown(), "Not compared with baseline.json: the plan differs from the baseline's.")
}
