//go:build load

package scenarios

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/study"
)

// forwardCell is one cell of TestLoad_Forward.
type forwardCell struct {
	name     string // the subtest's name
	baseline string // the cell it is read against; "" for a baseline
	table    string // the table it is shown in
	slow     bool   // the 50 ms upstream, else the fast one
	mode     string // RELAY_UPSTREAM_MODE
	workers  int    // RELAY_WORKERS as a multiple of the WORKERS knob (sync)
	kind     string // the request: tools/call, or tools/list for the cache hit
	lean     bool   // measured in a lean -short run (see lean) too
}

const (
	tableFast     = "Achieved rate — sync vs async (forward_fast)"
	tableSlow     = "Achieved rate — sync vs async (forward_slow)"
	tableCache    = "Achieved rate — sync cache hit (listings, forward_slow)"
	tableTopology = "Achieved rate — sync topology (forward_slow)"
)

var forwardCells = []forwardCell{
	{"upstream=fast/mode=sync", "", tableFast, false, "sync", 1, mcp.KindCallTool, false},
	{"upstream=fast/mode=async", "upstream=fast/mode=sync", tableFast, false, "async", 1, mcp.KindCallTool, false},
	{"upstream=slow/mode=sync", "", tableSlow, true, "sync", 1, mcp.KindCallTool, true},
	{"upstream=slow/mode=async", "upstream=slow/mode=sync", tableSlow, true, "async", 1, mcp.KindCallTool, true},
	{"upstream=slow/mode=sync/cache=hit", "upstream=slow/mode=sync", tableCache, true, "sync", 1, mcp.KindListTools, true},
	{"upstream=slow/mode=sync/workers=x4", "upstream=slow/mode=sync", tableTopology, true, "sync", 4, mcp.KindCallTool, false},
}

// TestLoad_Forward reproduces the seed's forward-path study (seed 003):
// tool calls offered at RATE per second — far above what the blocking
// runtime can absorb against a slow upstream — to a relay whose upstream
// requests either hold one of WORKERS workers for the whole round trip
// (mode=sync) or are multiplexed (mode=async), against a fast upstream
// (FAST, default 1 ms) and a slow one (SLOW, default 50 ms). Two more
// cells: listings answered from the relay's cache in sync mode (cache=hit)
// and the sync relay with four times the workers (workers=x4).
//
// The claim, checked on the cells measured: against the slow upstream the
// multiplexing mode answers nearly everything near the upstream's delay,
// while the blocking mode answers a small fraction at a latency many times
// that delay (requests queue in the relay, not at the upstream); more
// workers raise the blocking mode's rate; a cache hit never waits for the
// upstream; and the fast cells lose nothing, so the stub upstream and the
// generator were clear of saturation. Latency is over every answer, from
// the intended send time: a call the client gave up on (TIMEOUT) counts at
// its timeout.
//
// A lean -short run (make test's; see fixtures.MatrixEnv) measures the
// slow upstream's sync/async pair and the cache hit; LOADTEST_MATRIX=full
// and full size measure every cell.
//
// Knobs: RATE, RAMP, HOLD, WORKERS, FAST, SLOW, TIMEOUT. The study page is
// testdata/results/TestLoad_Forward/study[.short].md.
func TestLoad_Forward(t *testing.T) {
	notDeployed(t, "starts its target in each runtime model")
	k := loadtest.NewKnobs(t)
	kn := forwardKnobs{rate: k.Float("RATE", "400", "200", 1), ramp: k.Duration("RAMP", "5s", "1s"), hold: k.Duration("HOLD", "30s", "5s"),
		workers: k.Int("WORKERS", "4", "2", 1), fast: k.Duration("FAST", "1ms", "1ms"), slow: k.Duration("SLOW", "50ms", "50ms"),
		timeout: k.Duration("TIMEOUT", "5s", "3s")}

	page := newStudyPage(t, "Forward path: blocking (sync) vs multiplexing (async) upstream calls",
		fmt.Sprintf("Tool calls offered at %g/s to the relay, whose upstream is a stub answering every call after %v (fast) or %v (slow). "+
			"sync holds one of a fixed pool of workers for each upstream round trip; async multiplexes them. "+
			"Against the slow upstream the offer is far above what the sync pool can absorb (%d workers / %v ≈ %.0f calls/s): "+
			"read both columns together — async answers near the upstream's delay, sync answers a small fraction at a latency of seconds, "+
			"because calls wait in the relay, not at the upstream. Latency runs from the intended send time over every answer; a call the client "+
			"gave up on after %v counts at its timeout and as lost.", kn.rate, kn.fast, kn.slow, kn.workers, kn.slow, float64(kn.workers)/kn.slow.Seconds(), kn.timeout),
		"")
	// The cells: each measured alone, its figures kept and shown in its table.
	figs := map[string]cellFigures{}
	if lean(t) {
		t.Logf("lean -short run: the slow upstream's sync/async pair and the cache hit only (LOADTEST_MATRIX=full for all %d cells)", len(forwardCells))
	}
	for _, c := range forwardCells {
		if lean(t) && !c.lean {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			res, f := c.run(t, k, kn)
			page.mu.Lock()
			figs[c.name] = f
			page.mu.Unlock()
			page.add(res, c.table, forwardColumns, c.row(f, kn))
		})
	}
	// The baseline row is repeated in the tables that read against it.
	rows := page.rows()
	for _, tb := range page.s.Tables {
		for _, c := range forwardCells {
			if b, ok := rows[c.baseline]; ok && c.table == tb.Title && c.table != tableFor(c.baseline) {
				tb.Rows = append([]study.Row{b}, tb.Rows...)
			}
		}
	}
	// The reading: the claims, checked on the figures; it decides the verdict.
	page.write(t, forwardReading(figs, kn.slow))
}

// forwardKnobs are TestLoad_Forward's knobs.
type forwardKnobs struct {
	rate                            float64
	ramp, hold, fast, slow, timeout time.Duration
	workers                         int
}

// run measures the cell: calls of its kind offered at the rate to a relay
// in its mode against its upstream.
func (c forwardCell) run(t *testing.T, k *loadtest.Knobs, kn forwardKnobs) (*loadtest.Result, cellFigures) {
	delay := kn.fast
	if c.slow {
		delay = kn.slow
	}
	env := map[string]string{"RELAY_UPSTREAM_MODE": c.mode, "RELAY_WORKERS": strconv.Itoa(kn.workers * c.workers), "RELAY_LIST_CACHE_TTL": "1h"}
	inFlight := int(kn.rate*(kn.timeout+time.Second).Seconds()) + 100
	cell := startCell(t, k, env, stubUpstream(delay), inFlight, kn.timeout)
	res := loadtest.Test(t, cell.stack.Scenario(loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: c.kind, Weight: 1, Do: cell.requests(t, c.kind)}}, MaxInFlight: inFlight},
		Plan:     loadtest.Levels(kn.ramp, kn.hold, kn.rate),
		Checks:   []loadtest.Check{cell.stack.ComponentsUp()}, // losing calls is the finding, not a breach
		Params:   k.Params(),
		Drain:    kn.timeout + 2*time.Second,
	}))
	if err := res.Err(); err != nil {
		t.Error(err)
	}
	f := figuresOf(res, c.kind)
	t.Logf("%s: offered %.0f/s, achieved %.1f ok/s, mean %v, p99 %v, sent %d, completed %d, lost %d",
		c.name, f.Offered, f.Achieved, f.Mean.Round(time.Millisecond), f.P99.Round(time.Millisecond), f.Sent, f.Completed, f.Lost())
	return res, f
}

// row is the cell's row of its table.
func (c forwardCell) row(f cellFigures, kn forwardKnobs) study.Row {
	runtime := c.mode
	if c.kind == mcp.KindListTools {
		runtime += " (cache hit)"
	}
	wk := "multiplexed"
	if c.mode == "sync" {
		wk = fmt.Sprintf("workers=%d", kn.workers*c.workers)
	}
	return study.Row{Cell: c.name, Baseline: c.baseline, Labels: map[string]string{"runtime": runtime, "workers": wk, "kind": c.kind},
		Figures: f.figures()}
}

// tableFor returns the table of the named cell.
func tableFor(name string) string {
	for _, c := range forwardCells {
		if c.name == name {
			return c.table
		}
	}
	return ""
}

var forwardColumns = append([]study.Column{
	{Key: "runtime", Title: "Runtime"}, {Key: "kind", Title: "Request"},
}, append(rateColumns, study.Column{Key: "workers", Title: "Workers"})...)

// forwardReading returns every way the measured cells contradict the
// seed's reading (see TestLoad_Forward); pairs not measured are skipped.
func forwardReading(f map[string]cellFigures, slow time.Duration) []string {
	var problems []string
	frac := func(c cellFigures) float64 {
		if c.Sent == 0 {
			return 0
		}
		return float64(c.Completed) / float64(c.Sent)
	}
	for _, name := range []string{"upstream=fast/mode=sync", "upstream=fast/mode=async"} {
		if c, ok := f[name]; ok && (c.Lost() > 0 || c.Sent == 0) {
			problems = append(problems, fmt.Sprintf("%s lost %d of %d calls: the stub upstream or the generator was not clear of saturation, so the slow cells say nothing", name, c.Lost(), c.Sent))
		}
	}
	syncSlow, okS := f["upstream=slow/mode=sync"]
	if a, ok := f["upstream=slow/mode=async"]; ok {
		if frac(a) < 0.99 {
			problems = append(problems, fmt.Sprintf("upstream=slow/mode=async answered %.1f%% of its calls: the multiplexing mode should answer nearly all", 100*frac(a)))
		}
		if a.Mean > 3*slow {
			problems = append(problems, fmt.Sprintf("upstream=slow/mode=async's mean latency %v is more than 3× the upstream's %v: the multiplexing mode should answer near the upstream's delay", a.Mean.Round(time.Millisecond), slow))
		}
		if okS && a.Achieved < 2*syncSlow.Achieved {
			problems = append(problems, fmt.Sprintf("upstream=slow: async achieved %.1f ok/s, not twice sync's %.1f: the offered rate is not above what the blocking mode absorbs", a.Achieved, syncSlow.Achieved))
		}
	}
	if okS {
		if frac(syncSlow) > 0.5 {
			problems = append(problems, fmt.Sprintf("upstream=slow/mode=sync answered %.1f%% of its calls: the offer is not far above what the blocking mode absorbs (raise RATE or lower WORKERS)", 100*frac(syncSlow)))
		}
		if syncSlow.Mean < 10*slow {
			problems = append(problems, fmt.Sprintf("upstream=slow/mode=sync's mean latency %v is under 10× the upstream's %v: calls should wait in the relay", syncSlow.Mean.Round(time.Millisecond), slow))
		}
		if x4, ok := f["upstream=slow/mode=sync/workers=x4"]; ok && x4.Achieved < 1.5*syncSlow.Achieved {
			problems = append(problems, fmt.Sprintf("four times the workers achieved %.1f ok/s, not 1.5× the %.1f of upstream=slow/mode=sync", x4.Achieved, syncSlow.Achieved))
		}
	}
	if c, ok := f["upstream=slow/mode=sync/cache=hit"]; ok {
		if c.Lost() > 0 || c.Sent == 0 {
			problems = append(problems, fmt.Sprintf("the cache-hit cell lost %d of %d listings", c.Lost(), c.Sent))
		}
		if c.Mean >= slow {
			problems = append(problems, fmt.Sprintf("the cache-hit cell's mean latency %v is not below the upstream's %v: listings were not answered from the cache", c.Mean.Round(time.Millisecond), slow))
		}
	}
	return problems
}
