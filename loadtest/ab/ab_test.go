package ab_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// trial is the shape of one synthetic trial: the relay's CPU per request
// (µs), PostgreSQL's, the request kinds and how noisy the machine is.
type trial struct {
	relayCPU, pgCPU float64
	latency         float64 // median latency (ms) of the one kind "get" when kinds is nil
	noise           float64 // relative sd of each cost figure between trials, and of latency when latNoise is 0
	latNoise        float64 // relative sd of the trials' latency, shared by every kind
	stray           float64 // the chance that a trial is a stray: latency ×1.6, relay CPU ×1.25
	kinds           []kind
	queries         float64 // statements the database runs per successful request (0: not counted)
}

// kind is one request kind of a synthetic trial.
type kind struct {
	name     string
	n        int     // samples per trial
	latency  float64 // median latency, ms; a trial's samples spread log-normally (σ 0.3) about it
	fail     float64 // the chance that a request fails
	observed bool    // observed, not requested: stream events
}

// mixed is a service with a busy kind, a dashboard at about 1.5% of calls
// (50 a trial), an observed kind of stream events and a kind too rare to
// judge, on a machine whose latency varies 10% between trials (each kind
// another 5%) and cost 5%, with a stray trial one time in twenty.
func mixed() trial {
	return trial{relayCPU: 130, pgCPU: 40, noise: 0.05, latNoise: 0.10, stray: 0.05, kinds: []kind{
		{name: "tools/call", n: 3000, latency: 4, fail: 0.001},
		{name: "dashboard", n: 50, latency: 3},
		{name: "event", n: 1000, latency: 20, observed: true},
		{name: "initialize", n: 10, latency: 2},
	}}
}

// with returns tr with the kind named name changed by f.
func (tr trial) with(name string, f func(*kind)) trial {
	tr.kinds = slices.Clone(tr.kinds)
	for i := range tr.kinds {
		if tr.kinds[i].name == name {
			f(&tr.kinds[i])
		}
	}
	return tr
}

// result builds one trial's result: one step of 10 s whose figures are the
// trial's, each scaled by its own noise.
func (tr trial) result(r *rand.Rand) *loadtest.Result {
	jitter := func(sd float64) float64 { return math.Exp(sd * r.NormFloat64()) }
	kinds := tr.kinds
	if kinds == nil {
		kinds = []kind{{name: "get", n: 1000, latency: tr.latency}}
	}
	latNoise := tr.latNoise
	if latNoise == 0 {
		latNoise = tr.noise
	}
	stray, machine := 1.0, jitter(latNoise)
	if r.Float64() < tr.stray {
		stray = 1.6
	}
	const secs = 10.0
	var ok int64
	var results []*result.KindResult
	for _, k := range kinds {
		h := hdrhistogram.New(1, 10_000_000, 2) // µs up to 10 s, 1% resolution
		lat := k.latency * machine * jitter(latNoise/2) * stray
		for range k.n {
			h.RecordValue(int64(lat * 1000 * math.Exp(0.3*r.NormFloat64())))
		}
		enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
		if err != nil {
			panic(err)
		}
		var failed int64
		for range k.n {
			if r.Float64() < k.fail {
				failed++
			}
		}
		kr := &result.KindResult{Kind: k.name, Observed: k.observed, Histogram: string(enc),
			Outcomes: map[loadtest.Outcome]int64{loadtest.OK: int64(k.n) - failed}}
		if failed > 0 {
			kr.Outcomes[loadtest.HTTP5xx] = failed
		}
		if !k.observed {
			ok += int64(k.n) - failed
		}
		results = append(results, kr)
	}
	cores := func(perOK float64) float64 { return perOK * jitter(tr.noise) * 1e-6 * float64(ok) / secs }
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var queries *result.Queries
	if tr.queries > 0 {
		// Statements per request barely vary: 1%, from work in the
		// background; each takes about 0.1 ms.
		calls := int64(math.Round(tr.queries * float64(ok) * jitter(0.01)))
		queries = &result.Queries{Calls: calls, OK: ok, PerOK: float64(calls) / float64(ok), TotalMS: 0.1 * float64(calls) * jitter(tr.noise)}
	}
	return &loadtest.Result{
		Scenario: "TestLoad_X", Verdict: result.Pass,
		Environment: result.Environment{System: result.System{Components: []result.Component{
			{Name: "relay", Role: result.RoleTarget}, {Name: "postgres", Role: result.RoleDatabase}, {Name: "caddy", Role: result.RoleProxy}}}},
		Steps: []*loadtest.StepResult{{
			Step: loadtest.Step{Level: 100, Hold: 10 * time.Second}, Start: start, End: start.Add(10 * time.Second), Verdict: result.Pass,
			Kinds: results, Queries: queries,
			Resources: []result.SeriesSummary{
				{Component: "relay", Metric: "cpu", Unit: "cores", Mean: cores(tr.relayCPU * (1 + (stray-1)*0.4))},
				{Component: "postgres", Metric: "cpu", Unit: "cores", Mean: cores(tr.pgCPU)},
				{Component: "caddy", Metric: "cpu", Unit: "cores", Mean: cores(50)},
			},
		}},
	}
}

// runAB runs n trials per arm of the two shapes and returns the report.
func runAB(t *testing.T, a, b trial, n int, seed uint64) *ab.Report {
	t.Helper()
	return runConfig(t, a, b, ab.Config{Trials: n, Seed: seed}, seed)
}

// runConfig runs the two shapes under cfg, with draws from seed, and
// returns the report.
func runConfig(t *testing.T, a, b trial, cfg ab.Config, seed uint64) *ab.Report {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	reps, err := ab.Run(context.Background(), cfg, func(_ context.Context, arm ab.Arm, _ int) ([]*loadtest.Result, error) {
		if arm == ab.A {
			return []*loadtest.Result{a.result(r)}, nil
		}
		return []*loadtest.Result{b.result(r)}, nil
	})
	require.NoError(t, err)
	require.Len(t, reps, 1)
	return reps[0]
}

func TestOrderIsBalancedAndSeeded(t *testing.T) {
	o := ab.Order(6, 1)
	require.Len(t, o, 12)
	for i := 0; i < len(o); i += 2 {
		assert.NotEqual(t, o[i], o[i+1], "each block holds one A and one B")
	}
	assert.Equal(t, o, ab.Order(6, 1), "same seed, same order")
	differs := false
	for s := uint64(2); s < 10 && !differs; s++ {
		differs = !assert.ObjectsAreEqual(o, ab.Order(6, s))
	}
	assert.True(t, differs, "another seed, another order")
}

// A planted regression — the relay's CPU per request doubled — is caught
// as a regression of the primary cost figure, on a machine whose figures
// vary by 5% between trials. Among the 7 primary figures of one request
// kind a complete separation is significant (Holm, family α 0.05) from 6
// trials per arm, so the five first trials are extended by one block.
func TestPlantedRegressionIsCaught(t *testing.T) {
	base := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.05}
	slow := base
	slow.relayCPU = 260
	rep := runAB(t, base, slow, 5, 1)
	assert.Equal(t, ab.Regressed, rep.Verdict, rep.Reason)
	assert.Contains(t, rep.Reason, "worse in B: cpu/ok relay")
	assert.Equal(t, [2]int{6, 6}, rep.Trials)
	assert.Equal(t, "settled after 6 trials per arm", rep.Stop)
	assert.Equal(t, 7, rep.Deciding)
	md := rep.Markdown()
	assert.Contains(t, md, "## TestLoad_X: **regressed**")
	assert.Contains(t, md, "| **decides** | cpu/ok relay | 1")
	assert.Contains(t, md, "| reported | cpu/ok caddy | ")
	assert.Contains(t, md, "**worse**")
	_, err := json.Marshal(rep)
	require.NoError(t, err, "NaN figures are written as null")
}

// An N+1 planted in the busiest kind — twenty statements a request where
// there were two — is caught by the statements per request, even where CPU
// and latency move too little to tell: the database ran each in 0.1 ms.
func TestPlantedNPlusOneIsCaught(t *testing.T) {
	base := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.05, queries: 2}
	n1 := base
	n1.queries = 20
	rep := runAB(t, base, n1, 5, 1)
	assert.Equal(t, ab.Regressed, rep.Verdict, rep.Reason)
	assert.Contains(t, rep.Reason, "queries/ok")
	md := rep.Markdown()
	assert.Contains(t, md, "| **decides** | queries/ok | ")
	assert.Contains(t, md, "| **decides** | db time/ok | ")

	// Unchanged counts are not a change; a result that counted none has
	// no such figures.
	rep = runAB(t, base, base, 5, 2)
	assert.NotEqual(t, ab.Regressed, rep.Verdict, rep.Reason)
	var names []string
	for _, m := range ab.Measures(base.result(rand.New(rand.NewPCG(1, 2)))) {
		names = append(names, m.Name)
	}
	assert.Contains(t, names, "queries/ok")
	assert.Contains(t, names, "db time/ok")
	names = nil
	base.queries = 0
	for _, m := range ab.Measures(base.result(rand.New(rand.NewPCG(1, 2)))) {
		names = append(names, m.Name)
	}
	assert.NotContains(t, names, "queries/ok")
}

// measure runs n comparisons of a against b, seeds 1…n, and returns how
// many gave each verdict, how many regressions named want in their
// reason, and the median of the trials per arm they used.
func measure(t *testing.T, a, b trial, cfg ab.Config, n int, want string) (verdicts map[ab.Verdict]int, named int, medianTrials int) {
	t.Helper()
	verdicts = map[ab.Verdict]int{}
	var used []int
	for seed := uint64(1); seed <= uint64(n); seed++ {
		cfg.Seed = seed
		rep := runConfig(t, a, b, cfg, seed)
		verdicts[rep.Verdict]++
		if rep.Verdict == ab.Regressed && strings.Contains(rep.Reason, want) {
			named++
		}
		used = append(used, rep.Trials[ab.A])
	}
	slices.Sort(used)
	return verdicts, named, used[len(used)/2]
}

// A change to one request kind that is not the busiest — the dashboard
// handler waiting 5 ms, at 50 calls a trial — once passed as unchanged
// (×2.71 at p = 0.0079 in a real run) because only the busiest kind's p95
// decided. Every kind is judged now: a planted change to a secondary kind
// is a regression naming it in at least 9 of 10 comparisons of 5 trials
// per arm (extended up to 10), noise and stray trials included.
func TestSecondaryKindRegressionIsCaught(t *testing.T) {
	base := mixed()
	// The -short smoke's dashboard with stationary users: 14 to 23 calls
	// a trial, which the real planted A/B left unjudged.
	sparse := base.with("dashboard", func(k *kind) { k.n = 14 })
	for _, tc := range []struct {
		name       string
		base, head trial
		want       string // the figure the reason names
	}{
		// Dashboard p50 3 ms → 8 ms, 50 samples a trial.
		{"dashboard-latency", base, base.with("dashboard", func(k *kind) { k.latency = 8 }), "p50 dashboard"},
		// The same at 14 samples a trial.
		{"sparse-dashboard-latency", sparse, sparse.with("dashboard", func(k *kind) { k.latency = 8 }), "p50 dashboard"},
		// Stream events delivered twice as late: an observed kind is judged too.
		{"event-delay", base, base.with("event", func(k *kind) { k.latency = 40 }), " event "},
		// One dashboard call in ten fails, 0.1% of all requests: far below
		// the overall failure rate's band, a regression of the kind.
		{"dashboard-failures", base, base.with("dashboard", func(k *kind) { k.fail = 0.1 }), "failures dashboard"},
	} {
		t.Run("change="+tc.name, func(t *testing.T) {
			verdicts, named, median := measure(t, tc.base, tc.head, ab.Config{Trials: 5}, 10, tc.want)
			t.Logf("%s: %v, %d of 10 regressions name %q; median %d trials per arm", tc.name, verdicts, named, tc.want, median)
			assert.GreaterOrEqual(t, named, 9)
		})
	}
}

// A planted change that five trials see clearly but cannot carry through
// the correction for 14 primary figures is inconclusive, never unchanged,
// and the report says how many trials it would take.
func TestTooFewTrialsForTheFamilyIsInconclusive(t *testing.T) {
	base := mixed()
	base.stray = 0
	head := base.with("dashboard", func(k *kind) { k.latency = 8 })
	rep := runConfig(t, base, head, ab.Config{Trials: 5, MaxTrials: 5}, 1)
	assert.Equal(t, ab.Undecided, rep.Verdict, rep.Reason)
	assert.Contains(t, rep.Reason, "possibly worse in B, not shown with these trials: p50 dashboard")
	assert.Equal(t, 14, rep.Deciding)
	assert.Contains(t, rep.Stop, "stopped at max trials (5 per arm) with ")
	assert.Contains(t, rep.Stop, "p50 dashboard")
	assert.Contains(t, rep.Stop, "among 14 primary figures no difference can show before 6 trials per arm")
	for _, f := range rep.Figures {
		if f.Name == "p50 dashboard" {
			assert.Equal(t, ab.Different, f.Comparison.Answer, "different alone: %s", f.Comparison.Reason)
			assert.Equal(t, ab.Inconclusive, f.Answer, "not among 14")
			assert.InDelta(t, 14*2.0/252, f.PHolm, 1e-9)
		}
	}
	assert.Contains(t, rep.Markdown(), "| **decides** | p50 dashboard | ")
	assert.Contains(t, rep.Markdown(), "| inconclusive (different alone) |")
}

// The same build against itself, over every figure of a service with four
// request kinds, stray trials included: at most 1 comparison in 100 is a
// regression. AB_AA_COMPARISONS sets how many (default 300; about 0.1 s
// each, most of it encoding histograms; 1,000 gave 2 regressions, seeds
// 84 and 86, each a complete separation of 6 trials by chance).
func TestAAOverAllFiguresRarelyRegresses(t *testing.T) {
	if testing.Short() {
		t.Skip("300 comparisons of up to 10 trials per arm")
	}
	n := 300
	if s := os.Getenv("AB_AA_COMPARISONS"); s != "" {
		var err error
		n, err = strconv.Atoi(s)
		require.NoError(t, err, "AB_AA_COMPARISONS=%q: give a number of comparisons", s)
	}
	verdicts, _, median := measure(t, mixed(), mixed(), ab.Config{Trials: 5}, n, "")
	t.Logf("A/A, %d comparisons: %v; median %d trials per arm", n, verdicts, median)
	assert.LessOrEqual(t, verdicts[ab.Regressed], n/100)
	assert.Greater(t, verdicts[ab.Unchanged], n*9/10, "nearly every A/A comparison is unchanged")
}

// Config.Primary names the figures that decide: a regression of the
// dashboard alone decides when its p95 is named, even though 50 samples a
// trial leave p95 unjudged by default, and does not when only the relay's
// cost is named. A name that is no figure fails as soon as each arm has
// one result, naming the figures there are.
func TestPrimaryNamesTheDecidingFigures(t *testing.T) {
	base := mixed()
	base.stray = 0
	head := base.with("dashboard", func(k *kind) { k.latency = 8 })
	for _, tc := range []struct {
		name    string
		primary []string
		want    ab.Verdict
		reason  string // a substring of the reason
		absent  string // not in the reason
	}{
		// The dashboard's p95 alone: one figure, no correction, 5 trials suffice.
		{"p95-dashboard", []string{"p95 dashboard"}, ab.Regressed, "worse in B: p95 dashboard", ""},
		// The relay's cost alone: the dashboard is reported, not decided.
		{"cpu-relay", []string{"cpu/ok relay"}, ab.Unchanged, "could not rule out up to", "dashboard"},
	} {
		t.Run("primary="+tc.name, func(t *testing.T) {
			rep := runConfig(t, base, head, ab.Config{Trials: 5, Primary: tc.primary}, 1)
			assert.Equal(t, tc.want, rep.Verdict, rep.Reason)
			assert.Contains(t, rep.Reason, tc.reason)
			if tc.absent != "" {
				assert.NotContains(t, rep.Reason, tc.absent)
			}
			assert.Equal(t, len(tc.primary), rep.Deciding)
			for _, f := range rep.Figures {
				assert.Equal(t, slices.Contains(tc.primary, f.Name), f.Primary, f.Name)
			}
		})
	}
	t.Run("primary=unknown", func(t *testing.T) {
		calls := 0
		r := rand.New(rand.NewPCG(1, 1))
		reps, err := ab.Run(context.Background(), ab.Config{Trials: 5, Primary: []string{"p95 dashbord"}}, func(_ context.Context, arm ab.Arm, i int) ([]*loadtest.Result, error) {
			calls++
			if arm == ab.B && i == 0 {
				return nil, errors.New("the target did not build") // no result yet: the check waits
			}
			return []*loadtest.Result{base.result(r)}, nil
		})
		require.ErrorIs(t, err, ab.ErrUnknownFigure)
		assert.Nil(t, reps)
		assert.ErrorContains(t, err, `"p95 dashbord" is no figure of TestLoad_X`)
		assert.ErrorContains(t, err, `"p95 dashboard"`)
		assert.ErrorContains(t, err, `"cpu/ok relay"`)
		assert.LessOrEqual(t, calls, 4, "found when each arm had its first result, not after every trial")
	})
	_, err := ab.Run(context.Background(), ab.Config{Primary: []string{" p95 dashboard"}}, nil)
	assert.ErrorContains(t, err, `Primary holds " p95 dashboard"`)
}

// Kinds and percentiles with too few samples in a trial to estimate are
// listed as unjudged with why, in the report, its JSON and its Markdown,
// and decide nothing.
func TestUnjudgedFiguresAreListed(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	var as, bs []*loadtest.Result
	for range 5 {
		as, bs = append(as, mixed().result(r)), append(bs, mixed().result(r))
	}
	rep := ab.CompareResults("TestLoad_X", as, bs)
	got := map[string]string{}
	for _, f := range rep.Figures {
		if f.Answer == ab.Unjudged {
			got[f.Name] = f.Unjudged
			assert.False(t, f.Primary, f.Name)
		}
	}
	assert.Equal(t, map[string]string{
		// 50 dashboard calls a trial: 2.5 above p95, 0.5 above p99.
		"p95 dashboard": "50 samples in the sparsest trial, 100 needed",
		"p99 dashboard": "50 samples in the sparsest trial, 500 needed",
		// (3,000 tools/call and 1,000 events a trial are judged up to p99.)
		// 10 initialize calls a trial: their median only (5 above it).
		"failures initialize": "10 requests in the sparsest trial, 20 needed",
		"p95 initialize":      "10 samples in the sparsest trial, 100 needed",
		"p99 initialize":      "10 samples in the sparsest trial, 500 needed",
	}, got)
	assert.Equal(t, ab.Unjudged, rep.Figures[len(rep.Figures)-1].Answer, "unjudged figures come last")
	assert.Contains(t, rep.Markdown(), "| unjudged | p95 dashboard | ")
	assert.Contains(t, rep.Markdown(), "Unjudged, too few samples: ")
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"name":"p99 initialize","unit":"ms","direction":0,"rule":{"Alpha":0,"Confidence":0,"Relative":0.1,"Absolute":1},"primary":false,"unjudged":"10 samples in the sparsest trial, 500 needed"`)
	assert.Contains(t, string(b), `"answer":"unjudged"`)
}

// An unchanged verdict says the largest worsening its intervals leave
// open, in the reason, the Markdown and the JSON; the report says the
// trials stopped at MaxTrials with what was still inconclusive.
func TestUnchangedSaysWhatItCouldMiss(t *testing.T) {
	base := mixed()
	base.stray = 0
	rep := runConfig(t, base, base, ab.Config{Trials: 5}, 3)
	require.Equal(t, ab.Unchanged, rep.Verdict, rep.Reason)
	require.NotNil(t, rep.MissedUpTo)
	t.Log(rep.Reason)
	assert.Regexp(t, `^no primary figure moved by what matters — could not rule out up to \+\d+% \S+( \S+)? \(×[0-9.]+–×[0-9.]+\); stopped at max trials \(10 per arm\) with .+ still inconclusive$`, rep.Reason)
	m := rep.MissedUpTo
	widest, name := 0.0, ""
	for _, f := range rep.Figures {
		c := f.Comparison
		worse := c.RatioHi - 1
		if f.Direction == ab.HigherIsBetter {
			worse = 1 - c.RatioLo
		}
		if f.Primary && worse > widest {
			widest, name = worse, f.Name
		}
	}
	assert.Equal(t, name, m.Figure, "the widest interval on the worse side")
	assert.InDelta(t, widest, math.Abs(m.Change), 1e-12)
	assert.Contains(t, rep.Markdown(), "These trials could not rule out up to +")
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"missed_up_to":{"figure":"`+m.Figure+`","change":`)
	assert.Contains(t, string(b), `"stop":"stopped at max trials (10 per arm) with `)
}

// The verdict's error rates, measured over many comparisons: the same build
// against itself is (almost) never a regression in 200 A/A comparisons (per
// primary figure the test's false-alarm rate is under 1%, and the whole
// interval must lie beyond the 5% band too), and a doubled cost is caught in
// every one of 100.
func TestVerdictErrorRates(t *testing.T) {
	if testing.Short() {
		t.Skip("300 comparisons")
	}
	base := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.05}
	verdicts := map[ab.Verdict]int{}
	for seed := uint64(1); seed <= 200; seed++ {
		verdicts[runAB(t, base, base, 5, seed).Verdict]++
	}
	t.Logf("A/A, 200 comparisons: %v", verdicts)
	assert.LessOrEqual(t, verdicts[ab.Regressed], 1)
	slow := base
	slow.pgCPU = 80
	caught := 0
	for seed := uint64(1); seed <= 100; seed++ {
		if runAB(t, base, slow, 5, seed).Verdict == ab.Regressed {
			caught++
		}
	}
	t.Logf("2x database cost: caught in %d of 100", caught)
	assert.GreaterOrEqual(t, caught, 99)
}

// Noise the secondary figures ride on does not decide: caddy's cost tripled
// is reported as worse but is not a regression of the target.
func TestSecondaryFiguresDoNotDecide(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	var as, bs []*loadtest.Result
	for range 5 {
		as = append(as, trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.01}.result(r))
		b := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.01}.result(r)
		b.Steps[0].Resources[2].Mean *= 3
		bs = append(bs, b)
	}
	rep := ab.CompareResults("TestLoad_X", as, bs)
	assert.NotEqual(t, ab.Regressed, rep.Verdict, rep.Reason)
	for _, f := range rep.Figures {
		if f.Name == "cpu/ok caddy" {
			assert.False(t, f.Primary)
			assert.True(t, f.Comparison.Worse(f.Direction))
		}
	}
}

// The harness's own costs — the proxy's CPU and memory, the generator's
// CPU — are marked as such in a result's measures (a history tells their
// changes and never bisects them); the target's and its database's are not.
func TestMeasuresMarkTheHarness(t *testing.T) {
	res := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.01}.result(rand.New(rand.NewPCG(1, 1)))
	s := res.Steps[0]
	s.Resources = append(s.Resources,
		result.SeriesSummary{Component: "generator", Metric: "cpu", Unit: "cores", Mean: 0.2},
		result.SeriesSummary{Component: "relay", Metric: "memory", Unit: "bytes", Max: 64 << 20},
		result.SeriesSummary{Component: "caddy", Metric: "memory", Unit: "bytes", Max: 32 << 20})
	harness := map[string]bool{}
	for _, m := range ab.Measures(res) {
		harness[m.Name] = m.Harness
	}
	assert.Equal(t, map[string]bool{"throughput": false, "failures": false, "p50 get": false, "p95 get": false, "p99 get": false,
		"cpu/ok relay": false, "cpu/ok postgres": false, "cpu/ok caddy": true, "cpu/ok generator": true,
		"memory relay": false, "memory caddy": true}, harness)
}

// Trials that fail to run or say nothing about the target are left out and
// listed; with fewer than two valid trials an arm cannot be compared.
func TestRejectedTrials(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	base := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.02}
	reps, err := ab.Run(context.Background(), ab.Config{Trials: 3, MaxTrials: 3}, func(_ context.Context, arm ab.Arm, i int) ([]*loadtest.Result, error) {
		switch {
		case arm == ab.B && i == 0:
			return nil, errors.New("the target did not build")
		case arm == ab.B:
			res := base.result(r)
			res.Steps[0].Verdict = result.Invalid
			res.Verdict = result.Invalid
			return []*loadtest.Result{res}, nil
		}
		return []*loadtest.Result{base.result(r)}, nil
	})
	require.NoError(t, err)
	require.Len(t, reps, 1)
	rep := reps[0]
	assert.Equal(t, ab.Undecided, rep.Verdict)
	assert.Contains(t, rep.Reason, "too few valid trials (A 3, B 0)")
	assert.Len(t, rep.Rejected, 3)
	assert.Contains(t, rep.Rejected[0], "B trial 1: the target did not build")
	assert.Contains(t, rep.Rejected[1], "B result 1: invalid, no valid step")

	// Nothing ran at all: the first block says so, and no more trials are
	// spent on it (a missing binary once ran all twenty of -max-trials).
	ran := 0
	reps, err = ab.Run(context.Background(), ab.Config{Trials: 2}, func(context.Context, ab.Arm, int) ([]*loadtest.Result, error) {
		ran++
		return nil, errors.New("no Docker engine")
	})
	require.NoError(t, err)
	assert.Equal(t, ab.Undecided, ab.Worst(reps))
	assert.Contains(t, reps[0].Reason, "no trial gave a result")
	assert.Contains(t, reps[0].Reason, "more would fail the same way")
	assert.Equal(t, 4, ran, "the first block only")

	// One arm never gives a valid result: the same.
	ran = 0
	reps, err = ab.Run(context.Background(), ab.Config{Trials: 3}, func(_ context.Context, arm ab.Arm, _ int) ([]*loadtest.Result, error) {
		ran++
		if arm == ab.B {
			return nil, errors.New("the target did not build")
		}
		return []*loadtest.Result{base.result(r)}, nil
	})
	require.NoError(t, err)
	assert.Equal(t, ab.Undecided, ab.Worst(reps))
	assert.Contains(t, reps[0].Reason, "no trial of arm B gave a valid result")
	assert.Equal(t, 6, ran, "the first block only")
}

// One stray trial widens a figure's interval until a real 1.5× cost is
// only "inconclusive" — once taken as unchanged, which sent a bisection
// the wrong way. An unsettled figure now gets more trials, up to
// MaxTrials, and the regression shows.
func TestUnsettledFiguresGetMoreTrials(t *testing.T) {
	run := func(max int) (*ab.Report, int) {
		r := rand.New(rand.NewPCG(3, 3))
		a, b := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.03}, trial{relayCPU: 195, pgCPU: 40, latency: 5, noise: 0.03}
		ran := 0
		reps, err := ab.Run(context.Background(), ab.Config{Trials: 5, MaxTrials: max, Seed: 7}, func(_ context.Context, arm ab.Arm, i int) ([]*loadtest.Result, error) {
			ran++
			switch {
			case arm == ab.A:
				return []*loadtest.Result{a.result(r)}, nil
			case i == 1: // a stray trial: the target's CPU mostly missed
				stray := b
				stray.relayCPU = 20
				return []*loadtest.Result{stray.result(r)}, nil
			}
			return []*loadtest.Result{b.result(r)}, nil
		})
		require.NoError(t, err)
		return reps[0], ran
	}
	rep, ran := run(5)
	assert.Equal(t, 10, ran, "MaxTrials = Trials adds none")
	assert.NotEqual(t, ab.Regressed, rep.Verdict, "five trials with strays do not show it: %s", rep.Reason)
	rep, ran = run(0)
	assert.Greater(t, ran, 10, "more trials were added")
	assert.LessOrEqual(t, ran, 20, "at most twice Trials per arm")
	assert.Equal(t, ab.Regressed, rep.Verdict, "%s", rep.Reason)
	_, err := ab.Run(context.Background(), ab.Config{Trials: 5, MaxTrials: 3}, nil)
	assert.ErrorContains(t, err, "MaxTrials is 3, below Trials 5")
}

// A bisection step on a commit of the same cost once came out
// inconclusive: CPU per success ×1.11 (p = 0.035) from a noisy machine,
// beyond the 5% band, and git could not name the commit. Matters, set to
// about half the regression sought, widens every figure's band: the
// noise is no change, the regression still is one, and a band wider than
// the regression hides it.
func TestMattersWidensTheBand(t *testing.T) {
	trials := func(relayB float64) (as, bs []*loadtest.Result) {
		r := rand.New(rand.NewPCG(5, 5))
		for range 10 {
			a, b := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.04}, trial{relayCPU: relayB, pgCPU: 40, latency: 5, noise: 0.04}
			as, bs = append(as, a.result(r)), append(bs, b.result(r))
		}
		return as, bs
	}
	as, bs := trials(130 * 1.11)
	noise := ab.CompareResults("TestLoad_X", as, bs)
	assert.NotEqual(t, ab.Unchanged, noise.Verdict, "an 11%% change is beyond the default 5%%: %s", noise.Reason)
	noise = ab.Config{Matters: 0.25}.CompareResults("TestLoad_X", as, bs)
	assert.Equal(t, ab.Unchanged, noise.Verdict, "within 25%%: %s", noise.Reason)
	for _, f := range noise.Figures {
		if f.Name == "cpu/ok relay" {
			assert.Contains(t, f.Comparison.Reason, "±25%")
		}
	}
	as, bs = trials(130 * 1.5)
	worse := ab.Config{Matters: 0.25}.CompareResults("TestLoad_X", as, bs)
	assert.Equal(t, ab.Regressed, worse.Verdict, "×1.5 is beyond 25%%: %s", worse.Reason)
	assert.Contains(t, worse.Reason, "cpu/ok relay")
	worse = ab.Config{Matters: 0.6}.CompareResults("TestLoad_X", as, bs)
	assert.NotEqual(t, ab.Regressed, worse.Verdict, "×1.5 is within 60%%: %s", worse.Reason)

	// Run passes it on, and refuses a band that is no fraction.
	reps, err := ab.Run(context.Background(), ab.Config{Trials: 2, MaxTrials: 2, Matters: 0.4}, func(_ context.Context, arm ab.Arm, i int) ([]*loadtest.Result, error) {
		return []*loadtest.Result{[2][]*loadtest.Result{as, bs}[arm][i]}, nil
	})
	require.NoError(t, err)
	for _, f := range reps[0].Figures {
		if f.Name == "cpu/ok relay" {
			assert.Contains(t, f.Comparison.Reason, "±40%")
		}
	}
	for _, m := range []float64{-0.1, 1, math.NaN()} {
		_, err := ab.Run(context.Background(), ab.Config{Matters: m}, nil)
		assert.ErrorContains(t, err, "Matters is", "Matters %g", m)
	}
}

func TestWorst(t *testing.T) {
	rep := func(v ab.Verdict) *ab.Report { return &ab.Report{Verdict: v} }
	assert.Equal(t, ab.Regressed, ab.Worst([]*ab.Report{rep(ab.Improved), rep(ab.Regressed), rep(ab.Undecided)}))
	assert.Equal(t, ab.Undecided, ab.Worst([]*ab.Report{rep(ab.Unchanged), rep(ab.Undecided)}))
	assert.Equal(t, ab.Unchanged, ab.Worst([]*ab.Report{rep(ab.Unchanged), rep(ab.Improved)}))
	assert.Equal(t, ab.Undecided, ab.Worst(nil))
}
