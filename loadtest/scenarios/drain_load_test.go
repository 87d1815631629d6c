//go:build load

package scenarios

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/study"
)

// drainPolicy is one cell of TestLoad_Drain: a RELAY_DRAIN_POLICY and
// whether it claims to be graceful (every accepted call completes).
type drainPolicy struct {
	name     string
	graceful bool
}

var drainPolicies = []drainPolicy{{"complete", true}, {"budgeted", true}, {"minimal", false}}

// The phases of a drain cell, by when a call was sent.
const (
	phaseBefore   = iota // before SIGTERM
	phaseDraining        // between SIGTERM and the relay's exit
	phaseAfter           // after the relay exited
	numPhases
)

// drainFigures are one drain cell's figures.
type drainFigures struct {
	Policy   string
	Graceful bool
	// Drained is whether the relay logged the end of its drain; Duration
	// is the drain it logged, Stop the time from SIGTERM to exit as the
	// test saw it.
	Drained        bool
	Duration, Stop time.Duration
	// Inflight and Abandoned are the relay's: calls accepted when the
	// drain began, and those it cancelled.
	Inflight, Abandoned int64
	// Sent, Completed and Failed count calls by the phase they were sent
	// in; Cancelled counts tool errors (the drain's cancellations).
	Sent, Completed, Failed [numPhases]int64
	Cancelled               int64
	// Recorded is the calls the relay recorded as completed (usage rows
	// with outcome ok) during the cell.
	Recorded int64
	// Mean is the mean latency of the answered calls.
	Mean time.Duration
}

func sum(a [numPhases]int64) int64 { return a[0] + a[1] + a[2] }

// FailedDuringStop is the calls sent before the relay exited that did not
// complete.
func (d drainFigures) FailedDuringStop() int64 {
	return d.Failed[phaseBefore] + d.Failed[phaseDraining]
}

// TestLoad_Drain reproduces the seed's shutdown-drain study (seed 003):
// tool calls at RATE per second to a relay (async mode) whose upstream
// takes SLOW (default 50 ms), so calls are in flight when, AT into the
// hold, the relay is sent SIGTERM, under each RELAY_DRAIN_POLICY: complete
// (wait for every accepted call), budgeted (wait up to BUDGET, default
// 1 s — more than a call takes, so graceful here), minimal (cancel at
// once). Each cell reports the relay's drain duration, the client's
// failures during the stop, sent and completed — and checks that nothing
// completed was lost (every call the relay recorded as completed reached
// its client as a success, and no more) and that a graceful policy lost
// no accepted call (none cancelled, no tool error). The minimal policy
// cancels the calls in flight by design; its cell also shows that the
// graceful bar would have failed it.
//
// A lean -short run (make test's; see fixtures.MatrixEnv) measures the
// complete and minimal policies; LOADTEST_MATRIX=full and full size all
// three.
//
// Knobs: RATE, RAMP, HOLD, AT, SLOW, BUDGET, TIMEOUT.
func TestLoad_Drain(t *testing.T) {
	notDeployed(t, "restarts its target under each drain policy")
	k := loadtest.NewKnobs(t)
	rate := k.Float("RATE", "200", "100", 1)
	ramp, hold := k.Duration("RAMP", "2s", "1s"), k.Duration("HOLD", "20s", "4s")
	at := k.Duration("AT", "10s", "2s")
	slow, budget := k.Duration("SLOW", "50ms", "50ms"), k.Duration("BUDGET", "1s", "1s")
	timeout := k.Duration("TIMEOUT", "10s", "10s")

	page := newStudyPage(t, "Shutdown drain under forward_slow",
		fmt.Sprintf("Tool calls at %g/s to the relay (async) against a stub upstream that answers after %v; %v into the hold the relay gets SIGTERM. "+
			"complete waits for every accepted call, budgeted for up to %v (then cancels), minimal cancels at once. "+
			"Drain duration is the relay's own (SIGTERM to streams closed); client failures during the stop are the calls sent before the relay exited that did not complete — "+
			"calls cancelled by the drain and calls refused once it stopped accepting. Recorded is the calls the relay recorded as completed: "+
			"it must equal completed (nothing completed was lost). A graceful policy (complete, budgeted) that loses an accepted call fails.",
			rate, slow, at, budget), "")
	// The cells: one policy each, its figures kept and shown.
	figs := map[string]drainFigures{}
	var mu sync.Mutex
	for _, p := range drainPolicies {
		if lean(t) && p.name == "budgeted" {
			t.Logf("lean -short run: policy=budgeted left out (LOADTEST_MATRIX=full runs it)")
			continue
		}
		t.Run("policy="+p.name, func(t *testing.T) {
			env := map[string]string{"RELAY_UPSTREAM_MODE": "async", "RELAY_DRAIN_POLICY": p.name, "RELAY_DRAIN_TIMEOUT": budget.String()}
			inFlight := int(rate*(slow+time.Second).Seconds()) + 100
			cell := startCell(t, k, env, stubUpstream(slow), inFlight, timeout)
			params := maps.Clone(k.Params())
			params["drain_policy"] = p.name
			d, res := drainCell(t, cell, p, params, rate, ramp, hold, at, timeout)
			mu.Lock()
			figs[p.name] = d
			mu.Unlock()
			page.add(res, "Drain duration under forward_slow", drainColumns, p.row(t, d))
		})
	}
	// The verdict, decided once over every policy's figures.
	var problems []string
	for _, p := range drainPolicies {
		if d, ok := figs[p.name]; ok {
			problems = append(problems, drainVerdict(d)...)
		}
	}
	page.write(t, problems)
}

// row is the policy's row of the drain table. Its verdict label reads
// the figures as the study's verdict does; on a policy that is not
// graceful, the graceful bar must fail it when it cancelled accepted
// calls — the check can fail, on real figures — or the test fails.
func (p drainPolicy) row(t *testing.T, d drainFigures) study.Row {
	verdict := "nothing lost"
	if len(drainVerdict(d)) > 0 {
		verdict = "FAIL"
	}
	if !p.graceful {
		as := d
		as.Graceful = true
		if d.Abandoned > 0 && len(drainVerdict(as)) == 0 {
			t.Errorf("policy=%s cancelled %d accepted calls, yet the graceful bar passed it", p.name, d.Abandoned)
		}
		if verdict != "FAIL" {
			verdict = fmt.Sprintf("not graceful: cancelled %d accepted", d.Abandoned)
		}
	}
	baseline := "policy=complete"
	if p.name == "complete" {
		baseline = ""
	}
	t.Logf("policy=%s: drain %v (stop seen %v), in flight %d, abandoned %d, failures during stop %d, refused after exit %d, sent %d, completed %d, recorded %d",
		p.name, d.Duration, d.Stop, d.Inflight, d.Abandoned, d.FailedDuringStop(), d.Failed[phaseAfter], sum(d.Sent), sum(d.Completed), d.Recorded)
	return study.Row{Cell: "policy=" + p.name, Baseline: baseline,
		Labels: map[string]string{"graceful": strconv.FormatBool(p.graceful), "verdict": verdict},
		Figures: map[string]float64{
			"drain_ms": ms(d.Duration), "stop_ms": ms(d.Stop), "inflight": float64(d.Inflight), "abandoned": float64(d.Abandoned),
			"failures": float64(d.FailedDuringStop()), "refused_after": float64(d.Failed[phaseAfter]),
			"mean_ms": ms(d.Mean), "sent": float64(sum(d.Sent)), "completed": float64(sum(d.Completed)), "recorded": float64(d.Recorded),
		}}
}

var drainColumns = []study.Column{
	{Key: "graceful", Title: "Graceful"},
	{Key: "drain_ms", Title: "Drain duration (ms)", Digits: 1},
	{Key: "stop_ms", Title: "SIGTERM → exit (ms)", Digits: 1},
	{Key: "inflight", Title: "In flight at SIGTERM"},
	{Key: "abandoned", Title: "Cancelled by the drain"},
	{Key: "failures", Title: "Client failures during stop"},
	{Key: "refused_after", Title: "Refused after exit"},
	{Key: "mean_ms", Title: "Mean latency (ms)", Digits: 1},
	{Key: "sent", Title: "Sent"},
	{Key: "completed", Title: "Completed"},
	{Key: "recorded", Title: "Recorded"},
	{Key: "verdict", Title: "Verdict"},
}

// drainCell runs one drain cell: calls at rate, SIGTERM to the relay at
// ramp+at, the run ending after its hold; then the relay's log and
// database are read.
func drainCell(t *testing.T, cell *cellStack, p drainPolicy, params map[string]string, rate float64, ramp, hold, at, timeout time.Duration) (drainFigures, *loadtest.Result) {
	d := drainFigures{Policy: p.name, Graceful: p.graceful}
	db, err := sql.Open("sqlite", "file:"+cell.stack.SQLitePath+"?mode=ro&_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	countOK := func() int64 {
		var n int64
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT count(*) FROM usage WHERE outcome = 'ok'`).Scan(&n))
		return n
	}
	before := countOK()

	call := cell.requests(t, mcp.KindCallTool)
	var phase atomic.Int32
	var mu sync.Mutex
	var latSum time.Duration
	var answered int64
	do := func(ctx context.Context) loadtest.Response {
		ph := phase.Load()
		start := time.Now()
		r := call(ctx)
		mu.Lock()
		defer mu.Unlock()
		d.Sent[ph]++
		switch r.Outcome {
		case loadtest.OK:
			d.Completed[ph]++
		case loadtest.AppError:
			d.Cancelled++
			d.Failed[ph]++
		default:
			d.Failed[ph]++
		}
		if r.Outcome == loadtest.OK || r.Outcome == loadtest.AppError {
			latSum += time.Since(start)
			answered++
		}
		return r
	}

	relay := cell.stack.Component("relay")
	stopped := make(chan error, 1)
	go func() {
		select {
		case <-time.After(ramp + at):
		case <-t.Context().Done():
			stopped <- t.Context().Err()
			return
		}
		sigterm := time.Now()
		phase.Store(phaseDraining)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err := relay.Stop(ctx) // SIGTERM, then SIGKILL after 10 s
		d.Stop = time.Since(sigterm)
		phase.Store(phaseAfter)
		stopped <- err
	}()
	res := loadtest.Test(t, cell.stack.Scenario(loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: mcp.KindCallTool, Weight: 1, Do: do}}, MaxInFlight: int(rate*(timeout.Seconds()+1)) + 100},
		Plan:     loadtest.Levels(ramp, hold, rate),
		Checks:   []loadtest.Check{cell.stack.ComponentsUp()}, // the relay is stopped on purpose; the drain's checks follow
		Params:   params,
		Drain:    timeout + 2*time.Second,
	}))
	require.NoError(t, <-stopped, "stopping the relay")
	if err := res.Err(); err != nil {
		t.Error(err)
	}
	mu.Lock()
	if answered > 0 {
		d.Mean = latSum / time.Duration(answered)
	}
	mu.Unlock()
	d.Recorded = countOK() - before

	logs, err := relay.Logs(context.Background())
	require.NoError(t, err)
	for _, line := range bytes.Split(logs, []byte("\n")) {
		var m struct {
			Msg          string  `json:"msg"`
			DrainSeconds float64 `json:"drain_seconds"`
			Inflight     int64   `json:"inflight"`
			Abandoned    int64   `json:"abandoned"`
		}
		if json.Unmarshal(line, &m) != nil || m.Msg != "relay: drained" {
			continue
		}
		d.Drained, d.Duration = true, time.Duration(m.DrainSeconds*float64(time.Second))
		d.Inflight, d.Abandoned = m.Inflight, m.Abandoned
	}
	return d, res
}

// drainVerdict returns every way a drain cell failed: the relay did not
// finish its drain, no call was in flight at SIGTERM (the cell says
// nothing), a completed call was lost (recorded by the relay but not a
// success at its client, or the other way round), or a graceful policy
// lost an accepted call (cancelled by the drain, or answered with a tool
// error).
func drainVerdict(d drainFigures) []string {
	var out []string
	name := "policy=" + d.Policy
	if !d.Drained {
		out = append(out, fmt.Sprintf("%s: the relay never logged the end of its drain (killed before it finished?)", name))
	}
	if d.Drained && d.Inflight == 0 {
		out = append(out, fmt.Sprintf("%s: no call was in flight at SIGTERM, so the cell says nothing about the drain: raise RATE or SLOW", name))
	}
	if c := sum(d.Completed); d.Recorded != c {
		out = append(out, fmt.Sprintf("%s: completed calls were lost: the relay recorded %d calls as completed, its clients got %d successes", name, d.Recorded, c))
	}
	if d.Graceful && (d.Abandoned > 0 || d.Cancelled > 0) {
		out = append(out, fmt.Sprintf("%s is graceful but lost accepted calls: %d cancelled by the drain, %d answered with a tool error", name, d.Abandoned, d.Cancelled))
	}
	return out
}
