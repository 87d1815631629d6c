package report

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// kind makes a kind's figures of n samples around median (lognormal), of
// which errs failed.
func kind(t testing.TB, name string, n, errs int64, median time.Duration, observed bool, rng *rand.Rand) *result.KindResult {
	t.Helper()
	h := hdrhistogram.New(1, 600_000_000, 3)
	for range n {
		us := float64(median.Microseconds()) * math.Exp(rng.NormFloat64()*0.5)
		h.RecordValue(max(int64(us), 1))
	}
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	k := &result.KindResult{Kind: name, Outcomes: map[loadtest.Outcome]int64{loadtest.OK: n - errs}, Observed: observed,
		Histogram: string(enc), Latency: result.Latencies{
			P50: us(h.ValueAtPercentile(50)), P90: us(h.ValueAtPercentile(90)), P95: us(h.ValueAtPercentile(95)),
			P99: us(h.ValueAtPercentile(99)), P999: us(h.ValueAtPercentile(99.9)), Max: us(h.Max()),
			Mean: time.Duration(h.Mean() * float64(time.Microsecond)),
		}}
	if errs > 0 {
		k.Outcomes[loadtest.AppError] = errs
		k.Errors = []string{`tool error: <upstream> said "no" & gave up`}
	}
	return k
}

// fixture is a users ladder 10, 20, 40 of a relay: tools/call (the
// primary kind), tools/list, and fanout — an observed kind with more
// samples than any request kind. Step 3 breaches the p95 SLO of
// tools/call; capacity 20, first failure 40. It has a timeline with
// phases and sampled resources, a profile on step 3, findings and a
// baseline comparison.
func fixture(t testing.TB) *loadtest.Result {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	res := &loadtest.Result{
		Schema: result.SchemaVersion, Scenario: "TestLoad_Fixture/users=40", Model: "users",
		Plan: result.PlanInfo{Type: "ladder", Steps: []loadtest.Step{
			{Level: 10, Ramp: 2 * time.Second, Hold: 10 * time.Second},
			{Level: 20, Ramp: 2 * time.Second, Hold: 10 * time.Second},
			{Level: 40, Ramp: 2 * time.Second, Hold: 10 * time.Second},
		}},
		Checks: []string{"p95 of tools/call < 250ms", "p99 of tools/call < 1s", "failures of all requests < 1%", "p95 of fanout < 50ms"},
		Params: map[string]string{"users": "40", "backend": "local"}, Seed: 7,
		Start: start, End: start.Add(40 * time.Second),
		Provenance: result.Provenance{Commit: "0123456789abcdef0123456789abcdef01234567", Command: "go test -tags load -run 'TestLoad_Fixture/users=40' ./loadtest/scenarios",
			Args: []string{"scenarios.test", "-test.run=TestLoad_Fixture"}, Env: map[string]string{"LOADTEST_TARGET": "http://127.0.0.1:8080/"}},
		Environment: result.Environment{CPUModel: "AMD EPYC", Cores: 2, GOMAXPROCS: 2, Kernel: "6.1", OS: "Debian GNU/Linux 12", Memory: 8 << 30, Go: "go1.26",
			System: result.System{Backend: "local", CPUs: 1, Memory: 256 << 20, Components: []result.Component{{Name: "relay", Role: result.RoleTarget, Version: "dev"}}}},
		Capacity: 20, FirstFailure: 40, Verdict: result.Fail,
		Conclusion: "ladder stopped after step 3 (level 40) was fail",
		Findings:   []result.Finding{{Name: "relay memory per user", Value: 1 << 20, Low: 900 << 10, High: 1100 << 10, Unit: "bytes"}},
		Baseline:   &result.Comparison{Path: "testdata/baselines/TestLoad_Fixture/users=40.json", Compared: 12, Regressions: []string{"capacity 30 → 20 (-33%)"}},
	}
	medians := []time.Duration{40 * time.Millisecond, 90 * time.Millisecond, 300 * time.Millisecond}
	for i, st := range res.Plan.Steps {
		from := start.Add(time.Duration(i*13+2) * time.Second)
		s := &loadtest.StepResult{Index: i, Step: st, Start: from, End: from.Add(10 * time.Second),
			Offered: st.Level * 10, Achieved: st.Level * 9.9, Throughput: st.Level * 9.8, Verdict: result.Pass,
			Self: result.SelfCheckResult{ScheduleLagP99: 300 * time.Microsecond, CPU: 0.1, Memory: 30 << 20, MemoryLimit: 8 << 30, Files: 40, FileLimit: 1024},
			Resources: []result.SeriesSummary{
				{Component: "relay", Metric: "cpu", Unit: "cores", Mean: 0.2 * float64(i+1), Max: 0.3 * float64(i+1), Samples: 10, Limit: 1},
				{Component: "relay", Metric: "memory", Unit: "bytes", Mean: float64(40+20*i) * (1 << 20), Max: float64(50+20*i) * (1 << 20), Samples: 10, Limit: 256 << 20},
			}}
		s.Kinds = []*result.KindResult{
			kind(t, "tools/call", int64(st.Level*100), int64(i*i), medians[i], false, rng),
			kind(t, "tools/list", int64(st.Level*10), 0, medians[i]/4, false, rng),
			kind(t, "fanout", int64(st.Level*600), 0, 5*time.Millisecond*time.Duration(i+1), true, rng),
		}
		if i == 2 {
			s.Verdict = result.Fail
			s.Violations = []string{"p95 of tools/call < 250ms: measured 612.3ms"}
			s.Saturated = []string{"relay cpu: mean 0.95 of 1 cores (95%)"}
			s.Profiles = []result.Profile{{Component: "relay", Type: "cpu", Path: "users=40.profiles/step3 relay.cpu.pprof"}}
		}
		res.Steps = append(res.Steps, s)
	}

	// The timeline: one window a second, ramps of 2 s, holds of 10 s,
	// drains of 1 s.
	tl := &result.Timeline{Every: time.Second, Start: start}
	call := &result.KindSeries{Kind: "tools/call"}
	list := &result.KindSeries{Kind: "tools/list"}
	fan := &result.KindSeries{Kind: "fanout", Observed: true}
	tl.Kinds = []*result.KindSeries{call, list, fan}
	for i, st := range res.Plan.Steps {
		base := float64(i * 13)
		tl.Phases = append(tl.Phases,
			result.Phase{Step: i, Name: "ramp", Level: st.Level, From: base, To: base + 2},
			result.Phase{Step: i, Name: "hold", Level: st.Level, From: base + 2, To: base + 12},
			result.Phase{Step: i, Name: "drain", Level: st.Level, From: base + 12, To: base + 13})
	}
	cpu := result.ResourceSeries{Component: "relay", Metric: "cpu", Unit: "cores", Limit: 1}
	mem := result.ResourceSeries{Component: "relay", Metric: "memory", Unit: "bytes", Limit: 256 << 20}
	gen := result.ResourceSeries{Component: "generator", Metric: "cpu", Unit: "cores", Limit: 2, Harness: true}
	for w := 1; w <= 39; w++ {
		step := min((w-1)/13, 2)
		level := res.Plan.Steps[step].Level
		tl.T = append(tl.T, float64(w))
		tl.Offered = append(tl.Offered, level*10)
		tl.Answered = append(tl.Answered, level*9.9)
		tl.Errors = append(tl.Errors, int64(step*w%3))
		tl.Dropped = append(tl.Dropped, 0)
		tl.InFlight = append(tl.InFlight, int64(level*2))
		p50 := medians[step].Microseconds()
		for _, ks := range []*result.KindSeries{call, list, fan} {
			ks.Count = append(ks.Count, int64(level*10))
			ks.Errors = append(ks.Errors, 0)
			v := p50
			if ks == fan {
				v = 5000 * int64(step+1)
			}
			if w == 20 { // a window without samples: a gap
				v = 0
			}
			ks.P50, ks.P95, ks.P99 = append(ks.P50, v), append(ks.P95, v*2), append(ks.P99, v*3)
		}
		cpu.T, cpu.V = append(cpu.T, float64(w)), append(cpu.V, 0.25*float64(step+1))
		mem.T, mem.V = append(mem.T, float64(w)), append(mem.V, float64(40+20*step)*(1<<20))
		gen.T, gen.V = append(gen.T, float64(w)), append(gen.V, 0.1)
	}
	tl.Resources = []result.ResourceSeries{gen, cpu, mem}
	res.Timeline = tl
	return res
}
