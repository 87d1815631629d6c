//go:build load

package scenarios

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/study"
)

// posture is one posture of TestLoad_FeatureTax: the relay's environment
// and what the test does beside the load (scraping its metrics).
type posture struct {
	name    string
	stack   string // the relay it runs on: postures that differ only in scraping share one
	env     map[string]string
	scrape  string // "", "normal" (every SCRAPE_EVERY) or "hammer" (back to back)
	planted bool   // a planted tax the A/B must call different
}

var allPostures = []posture{
	{"metrics_on", "metrics", map[string]string{"RELAY_METRICS": "1"}, "", false},
	{"standard_scrape", "metrics", map[string]string{"RELAY_METRICS": "1"}, "normal", false},
	{"scrape_hammer", "metrics", map[string]string{"RELAY_METRICS": "1"}, "hammer", false},
	{"trace_sampled", "trace_sampled", map[string]string{"RELAY_CALL_TRACE": "sampled"}, "", false},
	{"trace_full", "trace_full", map[string]string{"RELAY_CALL_TRACE": "full"}, "", false},
	{"planted_cpu", "planted_cpu", map[string]string{"RELAY_FAULT": "call-cpu:1ms"}, "", true},
}

// TestLoad_FeatureTax reproduces the seed's feature-tax study (seed 003):
// postures of one relay build at a fixed offered load (RATE tool calls per
// second against the fast stub upstream), each against the baseline
// posture — metrics off, call traces off — as interleaved A/B trials
// (loadtest/ab: TRIALS per arm, in blocks of one A and one B in random
// order, each trial RAMP + HOLD) on two relays running side by side. The
// postures: metrics on but not scraped; scraped every SCRAPE_EVERY; a
// scrape hammer (back-to-back scrapes for the whole trial); call traces
// sampled (one in 100) and full. Each posture's row gives the A/B's
// answer for throughput, call p95 and the relay's CPU per successful call
// — same, different (with the ratio and its 95% interval) or
// inconclusive — and its verdict. A control posture plants a tax
// (RELAY_FAULT=call-cpu:1ms): the study fails unless the A/B calls it
// different, so a posture that is clearly slower is seen.
//
// A lean -short run (the default of make test: see fixtures.MatrixEnv)
// measures two postures, scrape_hammer and the planted control; the
// nightly's -short job (LOADTEST_MATRIX=full) and full size measure all.
//
// Knobs: RATE, RAMP, HOLD, TRIALS, SCRAPE_EVERY.
func TestLoad_FeatureTax(t *testing.T) {
	notDeployed(t, "starts its target in each posture")
	k := loadtest.NewKnobs(t)
	postures := taxPostures(t)
	r := taxRun{k: k, rate: k.Float("RATE", "400", "200", 1), ramp: k.Duration("RAMP", "2s", "250ms"), hold: k.Duration("HOLD", "15s", "1s"),
		scrapeEvery: k.Duration("SCRAPE_EVERY", "5s", "250ms"), timeout: 5 * time.Second}
	trials, fast := k.Int("TRIALS", "6", "5", 2), 1*time.Millisecond
	r.conns = int(r.rate) + 100

	page := newStudyPage(t, "Feature tax: postures of one build at a fixed offered load",
		fmt.Sprintf("Tool calls offered at %g/s against a stub upstream that answers after %v. Each posture runs on its own relay beside a baseline relay "+
			"(metrics off, call traces off) of the same build; %d interleaved trials per arm of %v each (after a %v ramp) compare them. "+
			"Each figure's answer is *same* (the whole 95%% interval of the change within what matters: 5%% of CPU, 10%% + 1 ms of p95), "+
			"*different* (Mann-Whitney U at α = 0.01, with the ratio B/A and its interval), or *inconclusive*. "+
			"standard_scrape scrapes every %v, scrape_hammer back to back. planted_cpu is a control with 1 ms of CPU planted in every call: it must read different.",
			r.rate, fast, trials, r.hold, r.ramp, r.scrapeEvery), "")

	start := func(env map[string]string) *cellStack {
		return startCell(t, k, env, stubUpstream(fast), r.conns, r.timeout)
	}
	r.base = start(map[string]string{"RELAY_METRICS": "0", "RELAY_CALL_TRACE": "off"})
	r.baseDo = r.base.requests(t, mcp.KindCallTool)
	// Every posture's relay runs for the whole test, beside the baseline:
	// postures that differ only in scraping share one.
	stacks := map[string]*cellStack{}
	dos := map[string]func(context.Context) loadtest.Response{}
	for _, p := range postures {
		if _, ok := stacks[p.stack]; !ok {
			stacks[p.stack] = start(p.env)
			dos[p.stack] = stacks[p.stack].requests(t, mcp.KindCallTool)
		}
	}
	// The cells: an A/B of each posture against the baseline.
	verdicts := map[string]taxVerdict{}
	for _, p := range postures {
		t.Run("posture="+p.name, func(t *testing.T) {
			var first *loadtest.Result
			reps, err := ab.Run(t.Context(), ab.Config{Trials: trials, MaxTrials: trials, Seed: 1, Logf: t.Logf}, r.trial(t, p, stacks[p.stack], dos[p.stack], &first))
			require.NoError(t, err)
			require.Len(t, reps, 1)
			rep := reps[0]
			writeABReport(t, rep)
			v := taxVerdictOf(p, rep)
			verdicts[p.name] = v
			page.add(first, "Feature tax — postures vs metrics_off / traces off (forward_fast)", taxColumns, v.row(p))
			t.Logf("posture=%s vs baseline: %s — throughput %s; p95 %s; cpu/ok relay %s", p.name, rep.Verdict, v.Throughput, v.P95, v.CPU)
		})
	}
	// The reading decides the verdict over every posture.
	page.write(t, featureTaxReading(verdicts))
}

// taxPostures returns the postures a run measures: every one, but in a
// lean -short run the scrape hammer (the busiest posture) and the planted
// control, which proves that the trials can tell a tax.
func taxPostures(t *testing.T) []posture {
	if !lean(t) {
		return allPostures
	}
	var out []posture
	for _, p := range allPostures {
		if p.name == "scrape_hammer" || p.planted {
			out = append(out, p)
		}
	}
	t.Logf("lean -short run: postures %s and %s only (LOADTEST_MATRIX=full for all %d)", out[0].name, out[1].name, len(allPostures))
	return out
}

// taxRun is what every trial of TestLoad_FeatureTax shares: its knobs
// and the baseline relay.
type taxRun struct {
	k                                *loadtest.Knobs
	rate                             float64
	ramp, hold, scrapeEvery, timeout time.Duration
	conns                            int
	base                             *cellStack
	baseDo                           func(context.Context) loadtest.Response
}

// trial returns the A/B trial of posture p: arm A on the baseline relay,
// arm B on cell (its calls made by do), scraped as the posture says;
// first keeps the first result, for the study's profile.
func (r taxRun) trial(t *testing.T, p posture, cell *cellStack, do func(context.Context) loadtest.Response, first **loadtest.Result) ab.TrialFunc {
	return func(ctx context.Context, arm ab.Arm, i int) ([]*loadtest.Result, error) {
		c, d := r.base, r.baseDo
		if arm == ab.B {
			c, d = cell, do
		}
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var scrapes atomic.Int64
		if arm == ab.B && p.scrape != "" {
			every := r.scrapeEvery
			if p.scrape == "hammer" {
				every = 0
			}
			go scrapeLoop(tctx, c.stack.TargetURL+"/metrics", every, &scrapes)
		}
		res, err := loadtest.Run(tctx, c.stack.Scenario(loadtest.Scenario{
			Name:        "TestLoad_FeatureTax/posture=" + p.name,
			Workload:    &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: mcp.KindCallTool, Weight: 1, Do: d}}, MaxInFlight: r.conns},
			Plan:        loadtest.Levels(r.ramp, r.hold, r.rate),
			Checks:      []loadtest.Check{loadtest.FailuresBelow(mcp.KindCallTool, 0.001), c.stack.ComponentsUp()},
			SampleEvery: min(250*time.Millisecond, r.hold/4),
			Params:      r.k.Params(), Drain: r.timeout,
		}))
		if res != nil && *first == nil {
			*first = res
		}
		if err != nil {
			return nil, err
		}
		if p.scrape != "" && arm == ab.B {
			t.Logf("trial %d of B: %d scrapes", i+1, scrapes.Load())
		}
		return []*loadtest.Result{res}, nil
	}
}

// scrapeLoop GETs url every every (0: back to back, one at a time) until
// ctx ends, counting the scrapes; at most 1,000,000.
func scrapeLoop(ctx context.Context, url string, every time.Duration, n *atomic.Int64) {
	hc := &http.Client{Timeout: 10 * time.Second}
	defer hc.CloseIdleConnections()
	for range 1_000_000 {
		if ctx.Err() != nil {
			return
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		if resp, err := hc.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			n.Add(1)
		}
		if every > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(every):
			}
		}
	}
}

// writeABReport writes the A/B report of a posture beside the study.
func writeABReport(t *testing.T, rep *ab.Report) {
	path, err := study.Path(t.Name())
	require.NoError(t, err)
	md := strings.TrimSuffix(path, ".json") + ".ab.md"
	require.NoError(t, os.MkdirAll(filepath.Dir(md), 0o755))
	require.NoError(t, os.WriteFile(md, []byte(rep.Markdown()), 0o644))
}

// taxVerdict is one posture's A/B, as the study shows it.
type taxVerdict struct {
	Verdict              ab.Verdict
	Throughput, P95, CPU string // each figure's answer with its ratio
	CPUWorse, P95Worse   bool   // different and worse
	Trials               [2]int
	figs                 map[string]float64
}

// taxVerdictOf reads the posture's report.
func taxVerdictOf(p posture, rep *ab.Report) taxVerdict {
	v := taxVerdict{Verdict: rep.Verdict, Trials: rep.Trials, Throughput: "–", P95: "–", CPU: "–", figs: map[string]float64{}}
	for _, f := range rep.Figures {
		c := f.Comparison
		answer := string(c.Answer)
		if c.Answer == ab.Different && !math.IsNaN(c.Ratio) {
			answer = fmt.Sprintf("different ×%.3g (95%% CI ×%.3g–×%.3g)", c.Ratio, c.RatioLo, c.RatioHi)
		}
		switch f.Name {
		case "throughput":
			v.Throughput = answer
			v.figs["achieved_a"], v.figs["achieved_b"] = c.A.Median, c.B.Median
		case "p95 " + mcp.KindCallTool:
			v.P95, v.P95Worse = answer, c.Worse(f.Direction)
			v.figs["p95_a"], v.figs["p95_b"] = c.A.Median, c.B.Median
		case "cpu/ok relay":
			v.CPU, v.CPUWorse = answer, c.Worse(f.Direction)
			v.figs["cpu_a"], v.figs["cpu_b"] = c.A.Median, c.B.Median
		}
	}
	return v
}

var taxColumns = []study.Column{
	{Key: "trials", Title: "Trials (A+B)"},
	{Key: "achieved_b", Title: "Achieved (ok/s)", Digits: 1},
	{Key: "throughput", Title: "Throughput vs baseline"},
	{Key: "p95_a", Title: "Call p95, A (ms)", Digits: 2},
	{Key: "p95_b", Title: "Call p95 (ms)", Digits: 2},
	{Key: "p95", Title: "p95 vs baseline"},
	{Key: "cpu_a", Title: "Relay CPU/ok, A (µs)", Digits: 0},
	{Key: "cpu_b", Title: "Relay CPU/ok (µs)", Digits: 0},
	{Key: "cpu", Title: "CPU/ok vs baseline"},
	{Key: "verdict", Title: "A/B verdict"},
}

func (v taxVerdict) row(p posture) study.Row {
	return study.Row{Cell: "posture=" + p.name, Baseline: "metrics_off, traces off",
		Labels: map[string]string{"trials": fmt.Sprintf("%d+%d", v.Trials[0], v.Trials[1]), "throughput": v.Throughput,
			"p95": v.P95, "cpu": v.CPU, "verdict": string(v.Verdict)},
		Figures: v.figs}
}

// featureTaxReading returns the study's problems: a planted tax the A/B
// did not call different and worse (the trials cannot tell a tax), and a
// posture without two valid trials per arm.
func featureTaxReading(vs map[string]taxVerdict) []string {
	var out []string
	for _, p := range allPostures {
		v, ok := vs[p.name]
		if !ok {
			continue
		}
		if v.Trials[0] < 2 || v.Trials[1] < 2 {
			out = append(out, fmt.Sprintf("posture=%s: %d and %d valid trials, too few to compare", p.name, v.Trials[0], v.Trials[1]))
		}
		if p.planted && !v.CPUWorse && !v.P95Worse {
			out = append(out, fmt.Sprintf("posture=%s plants 1 ms of CPU per call, yet the A/B did not call it different and worse (CPU/ok %s; p95 %s): these trials cannot tell a tax", p.name, v.CPU, v.P95))
		}
	}
	return out
}
