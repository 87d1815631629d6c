package ab_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
)

// trial is the shape of one synthetic trial: the relay's CPU per request
// (µs), PostgreSQL's, the median latency (ms) and how noisy the machine is.
type trial struct {
	relayCPU, pgCPU, latency float64
	noise                    float64 // relative sd of each figure between trials
}

// result builds one trial's result: one step of 1,000 requests in 10 s
// whose figures are the trial's, each scaled by its own noise.
func (tr trial) result(r *rand.Rand) *loadtest.Result {
	jitter := func() float64 { return math.Exp(tr.noise * r.NormFloat64()) }
	h := hdrhistogram.New(1, 3_600_000_000, 3)
	lat := tr.latency * jitter()
	for range 1000 {
		h.RecordValue(int64(lat * 1000 * math.Exp(0.3*r.NormFloat64())))
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		panic(err)
	}
	const ok, secs = 1000, 10.0
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	return &loadtest.Result{
		Scenario: "TestLoad_X", Verdict: loadtest.Pass,
		Environment: loadtest.Environment{System: loadtest.System{Components: []loadtest.Component{
			{Name: "relay", Kind: loadtest.KindTarget}, {Name: "postgres", Kind: loadtest.KindDatabase}, {Name: "caddy", Kind: loadtest.KindProxy}}}},
		Steps: []*loadtest.StepResult{{
			Step: loadtest.Step{Level: 100, Hold: 10 * time.Second}, Start: start, End: start.Add(10 * time.Second), Verdict: loadtest.Pass,
			Kinds: []*loadtest.KindResult{{Kind: "get", Outcomes: map[loadtest.Outcome]int64{loadtest.OK: ok}, Histogram: string(enc)}},
			Resources: []loadtest.SeriesSummary{
				{Component: "relay", Metric: "cpu", Unit: "cores", Mean: tr.relayCPU * jitter() * 1e-6 * ok / secs},
				{Component: "postgres", Metric: "cpu", Unit: "cores", Mean: tr.pgCPU * jitter() * 1e-6 * ok / secs},
				{Component: "caddy", Metric: "cpu", Unit: "cores", Mean: 50 * jitter() * 1e-6 * ok / secs},
			},
		}},
	}
}

// runAB runs n trials per arm of the two shapes and returns the report.
func runAB(t *testing.T, a, b trial, n int, seed uint64) *ab.Report {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	reps, err := ab.Run(context.Background(), ab.Config{Trials: n, Seed: seed}, func(_ context.Context, arm ab.Arm, _ int) ([]*loadtest.Result, error) {
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
// vary by 5% between trials.
func TestPlantedRegressionIsCaught(t *testing.T) {
	base := trial{relayCPU: 130, pgCPU: 40, latency: 5, noise: 0.05}
	slow := base
	slow.relayCPU = 260
	rep := runAB(t, base, slow, 5, 1)
	assert.Equal(t, ab.Regressed, rep.Verdict, rep.Reason)
	assert.Contains(t, rep.Reason, "cpu/ok relay")
	assert.Equal(t, [2]int{5, 5}, rep.Trials)
	md := rep.Markdown()
	assert.Contains(t, md, "## TestLoad_X: **regressed**")
	assert.Contains(t, md, "| * | cpu/ok relay | 1")
	assert.Contains(t, md, "**worse**")
	_, err := json.Marshal(rep)
	require.NoError(t, err, "NaN figures are written as null")
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
			res.Steps[0].Verdict = loadtest.Invalid
			res.Verdict = loadtest.Invalid
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

	// Nothing ran at all.
	reps, err = ab.Run(context.Background(), ab.Config{Trials: 2}, func(context.Context, ab.Arm, int) ([]*loadtest.Result, error) {
		return nil, errors.New("no Docker engine")
	})
	require.NoError(t, err)
	assert.Equal(t, ab.Undecided, ab.Worst(reps))
	assert.Contains(t, reps[0].Reason, "no trial gave a result")
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
