//go:build load

package scenarios

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/mockupstream"
)

// rateKind is one request type whose ceiling TestLoad_RateCeiling finds.
type rateKind struct {
	name        string        // the subtest's kind=…
	kind        string        // the recorded kind
	full, short loadtest.Knee // the search, in arrivals per second
	p95         string        // the latency bar's default: a few times the request's own time
}

var rateKinds = []rateKind{
	{"calls", mcp.KindCallTool, loadtest.Knee{Start: 100, Factor: 2, Max: 6400, Ramp: 10 * time.Second, Hold: 30 * time.Second},
		loadtest.Knee{Start: 25, Factor: 2, Max: 50, Ramp: 2 * time.Second, Hold: 5 * time.Second}, "5s"},
	{"listings", mcp.KindListTools, loadtest.Knee{Start: 50, Factor: 2, Max: 3200, Ramp: 10 * time.Second, Hold: 30 * time.Second},
		loadtest.Knee{Start: 25, Factor: 2, Max: 50, Ramp: 2 * time.Second, Hold: 5 * time.Second}, "2500ms"},
	{"dashboard", relayload.KindDashboard, loadtest.Knee{Start: 100, Factor: 2, Max: 25_600, Ramp: 10 * time.Second, Hold: 30 * time.Second},
		loadtest.Knee{Start: 25, Factor: 2, Max: 50, Ramp: 2 * time.Second, Hold: 5 * time.Second}, "1s"},
}

// TestLoad_RateCeiling finds the published request-rate ceilings (seed
// 000): constant-rate probes of one request type at a time — tool calls,
// tool listings (five connectors), dashboard views over USAGE_ROWS
// recorded calls (500,000: a busy month) — against the fixed upstream
// envelope (calls 1 s ± 0.5 s, listings 250 ms ± 100 ms), a knee search on
// the arrival rate. The bar: failures (transport errors, timeouts, 5xx,
// shed load) under 0.5%, no arrival dropped by the generator, p95 under P95
// (a few times the request's own time, so a queue in the relay breaks it).
// The subtests' capacities are gathered into the published table —
// request type | embedded | PostgreSQL — in rate_ceilings.md beside the
// results.
//
// Knobs: START, FACTOR, MAX, PRECISION, PROBES, RAMP, HOLD (each kind has
// its defaults), P95, SESSIONS (the initialized sessions the load goes
// through), USAGE_ROWS, SEED, LOADTEST_DB, LOADTEST_TARGET_CPUS/MEMORY.
func TestLoad_RateCeiling(t *testing.T) {
	besideOthers(t)
	var mu sync.Mutex
	table := map[string]map[fixtures.Database]string{} // the first era's
	es := eras(t)
	for _, rk := range rateKinds {
		t.Run("kind="+rk.name, func(t *testing.T) {
			for _, db := range databases(t) {
				t.Run("db="+string(db), func(t *testing.T) {
					for i, e := range es {
						t.Run("era="+e.name, func(t *testing.T) {
							res := rateCeiling(t, rk, db, e)
							if i > 0 {
								return
							}
							mu.Lock()
							defer mu.Unlock()
							if table[rk.name] == nil {
								table[rk.name] = map[fixtures.Database]string{}
							}
							table[rk.name][db] = capacityCell(res)
						})
					}
				})
			}
		})
	}
	tb := report.Table{Title: fmt.Sprintf("Request-rate ceilings (seed 000, %s era)", es[0].name),
		Header: []string{"Request type", "Embedded DB (1 pod)", "PostgreSQL (1 pod)"}}
	for _, rk := range rateKinds {
		row := table[rk.name]
		cell := func(db fixtures.Database) string {
			if v, ok := row[db]; ok {
				return v
			}
			return "–"
		}
		if fixtures.Deployed() {
			tb.Rows = append(tb.Rows, []string{rk.kind, cell(deployedDB)})
			continue
		}
		tb.Rows = append(tb.Rows, []string{rk.kind, cell(fixtures.SQLite), cell(fixtures.Postgres)})
	}
	if fixtures.Deployed() {
		tb.Header = []string{"Request type", "The deployed system (shape unknown)"}
	}
	writeTable(t, "rate_ceilings", tb)
	eraTable(t)
}

// capacityCell is a result's capacity as the seeds' tables print it:
// "2600/s" for a rate, "8437" for users, "≥ …" for a lower bound, "none
// (fail)" when no level held.
func capacityCell(res *loadtest.Result) string {
	cell := format.Level(res.Capacity)
	if res.Model != "users" {
		cell += "/s"
	}
	switch c := res.Ceiling(); {
	case res.Capacity == 0:
		cell = "none (" + string(res.Verdict) + ")"
	case strings.HasPrefix(c, "Capacity is a lower bound"):
		cell = "≥ " + cell
	}
	return cell
}

func rateCeiling(t *testing.T, rk rateKind, db fixtures.Database, e era) *loadtest.Result {
	k := loadtest.NewKnobs(t)
	plan := k.Knee(rk.full, rk.short)
	p95 := k.Duration("P95", rk.p95, rk.p95)
	sessions := k.Int("SESSIONS", "2000", "50", 1)
	rows := k.Int("USAGE_ROWS", "500000", "20000", 0)
	seed := k.Uint("SEED", "1", "1")
	// Little's law: the top rate times a slow call's 1.5 s, with room.
	inFlight := int(plan.Max*2) + 100

	upstream := mockupstream.Envelope() // calls 1 s ± 0.5 s, listings 250 ms ± 100 ms
	upstream.Seed = seed
	stack := fixtures.Start(t, fixtures.WithTarget(relayload.Service()), fixtures.WithDatabase(db), fixtures.WithUpstreamBehavior(upstream),
		fixtures.WithTargetEnv(relayEnv), fixtures.WithConnections(inFlight))
	pop := populate(t, k, stack, sessions, rows, seed)
	hc := gatewayClient(t, stack, inFlight)
	checkClientAddrs(t, stack, hc)

	do, err := rateRequests(t.Context(), hc, stack.URL, pop.TokenOf, sessions, rk.kind, e.revision)
	require.NoError(t, err)
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: rk.kind, Weight: 1, Do: do}}, MaxInFlight: inFlight},
		Plan:     plan, Seed: seed, Reset: stack.Revive,
		Checks: []loadtest.Check{
			loadtest.FailuresBelow(rk.kind, 0.005),
			loadtest.NoDropped(),
			loadtest.LatencyBelow(rk.kind, 95, p95),
			stack.ComponentsUp(),
		},
		Samplers: relayMetrics(stack), Params: k.Params(),
		Drain: 10 * time.Second,
	}))
	t.Log(res.Ceiling())
	afterProbes(t, stack)
	if err := res.Err(); err != nil {
		t.Error(err)
	}
	return res
}

// rateRequests returns the request of kind, taking the sessions of users
// 0..n-1 in turn: MCP sessions initialized beforehand for calls and
// listings, the users' tokens for dashboard views.
func rateRequests(ctx context.Context, hc *httpc.Client, base string, token func(int) string, n int, kind, revision string) (func(context.Context) loadtest.Response, error) {
	var next atomic.Uint64
	pick := func() int { return int(next.Add(1) % uint64(n)) }
	if kind == relayload.KindDashboard {
		reqs := make([]*httpc.Request, n)
		for i := range reqs {
			r, err := hc.Prepare("GET", base+"/api/dashboard", []httpc.Header{{Name: "Authorization", Value: "Bearer " + token(i)}}, nil)
			if err != nil {
				return nil, err
			}
			reqs[i] = r
		}
		return func(ctx context.Context) loadtest.Response { return hc.Do(ctx, reqs[pick()]) }, nil
	}
	clients := make([]*mcp.Client, n)
	tools := make([][]mcp.Tool, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	for i := range clients {
		g.Go(func() error {
			c, err := mcp.New(hc, mcp.Options{URL: base + "/mcp", Token: token(i), ProtocolVersion: revision})
			if err != nil {
				return err
			}
			if r := c.Initialize(gctx); r.Outcome != loadtest.OK {
				return fmt.Errorf("initialize user %d: %v: %v", i, r.Outcome, r.Err)
			}
			ts, r := c.ListTools(gctx)
			if r.Outcome != loadtest.OK || len(ts) == 0 {
				return fmt.Errorf("tools/list of user %d: %v: %v (%d tools)", i, r.Outcome, r.Err, len(ts))
			}
			clients[i], tools[i] = c, ts
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if kind == mcp.KindListTools {
		return func(ctx context.Context) loadtest.Response { _, r := clients[pick()].ListTools(ctx); return r }, nil
	}
	args := map[string]any{"query": "rate ceiling"}
	return func(ctx context.Context) loadtest.Response {
		i := pick()
		ts := tools[i]
		_, r := clients[i].CallTool(ctx, ts[int(next.Load())%len(ts)].Name, args)
		return r
	}, nil
}
