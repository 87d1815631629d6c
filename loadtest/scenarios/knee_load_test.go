//go:build load

package scenarios

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/mockupstream"
)

// TestLoad_GatewayKnee answers the headline of the published gateway
// report (seed 000): how many modeled users one relay pod — 1 CPU /
// 512 MiB unless LOADTEST_TARGET_CPUS / LOADTEST_TARGET_MEMORY say
// otherwise — holds under the calibrated workload before they notice. A
// knee search from START users grows ×FACTOR while probes pass, then
// bisects to ±PRECISION; every probe starts from zero, ramps over RAMP and
// holds for HOLD under the gateway bar (gatewayBar). The report's Knee
// table is the published one — modeled users | result | relay CPU and
// memory — and its last line says what set the ceiling, or that the
// capacity is only a lower bound because the generator or the harness
// gave out first.
//
// Knobs: START, FACTOR, MAX, PRECISION, PROBES, RAMP, HOLD, GAP, SEED,
// the user model's (relayload.Model: BOT_SHARE, RELIST, DASHBOARD_SHARE,
// CALL_MEDIAN, CALL_P95, UPSTREAM_CAP — the slowest upstream answer, 50 s
// as calibrated —, TOOL_ERRORS, BIG_ANSWERS),
// LOADTEST_DB (both databases: LOADTEST_DB=all), LOADTEST_ERA (the
// stateless revision's run: stateless, or all for both back to back),
// LOADTEST_TARGET_CPUS, LOADTEST_TARGET_MEMORY. -short probes 20 → 80
// users on PostgreSQL unless LOADTEST_DB names another or all, in the
// handshake era, in both with LOADTEST_MATRIX=full.
func TestLoad_GatewayKnee(t *testing.T) {
	besideOthers(t)
	dbs := databases(t)
	if testing.Short() && os.Getenv("LOADTEST_DB") == "" && !fixtures.Deployed() {
		dbs = []fixtures.Database{fixtures.Postgres}
	}
	for _, db := range dbs {
		t.Run("db="+string(db), func(t *testing.T) {
			for _, e := range eras(t) {
				t.Run("era="+e.name, func(t *testing.T) { gatewayKnee(t, db, e, podSetup{}) })
			}
		})
	}
	eraTable(t)
}

// podSetup is how TestLoad_Replicas varies the knee search: replicas of
// the relay behind Caddy, each of cpus and memory (go-units; "" keeps
// WithLimits' defaults and the environment's), and a plan whose start and
// maximum are the knobs' times the replicas, and a cap on the upstream's
// slowest answer (UPSTREAM_CAP overrides it). The zero value is the
// headline's one pod.
type podSetup struct {
	replicas     int
	cpus, memory string
	plan         *loadtest.Knee // nil: the headline's
	upstreamCap  time.Duration  // the slowest upstream answer at full size; 0: the calibrated 50 s
}

func gatewayKnee(t *testing.T, db fixtures.Database, e era, pod podSetup) *loadtest.Result {
	k := loadtest.NewKnobs(t)
	var plan loadtest.Knee
	if pod.plan != nil {
		plan = *pod.plan
	} else {
		plan = k.Knee(
			loadtest.Knee{Start: 1000, Factor: 1.5, Max: 12_000, Ramp: 60 * time.Second, Hold: 90 * time.Second},
			loadtest.Knee{Start: 20, Factor: 2, Max: 80, Ramp: 3 * time.Second, Hold: 8 * time.Second})
	}
	gap, seed := k.Duration("GAP", "90s", "1s"), k.Uint("SEED", "1", "1")
	top := int(plan.Max)

	upstream := mockupstream.Calibrated() // log-normal calls: median 1.2 s, 5% over 12 s, capped at 50 s
	upstream.Seed = seed
	if testing.Short() {
		upstream.Call = mockupstream.Latency{Median: mockupstream.Duration(200 * time.Millisecond),
			P95: mockupstream.Duration(2 * time.Second), Cap: mockupstream.Duration(5 * time.Second)}
	}
	// A probe drains until its slowest call is answered: a lower cap (the
	// calls over it are over the 15 s bar either way) shortens every probe.
	capDefault := time.Duration(upstream.Call.Cap)
	if pod.upstreamCap > 0 && !testing.Short() {
		capDefault = pod.upstreamCap
	}
	upstream.Call.Cap = mockupstream.Duration(capDefault)
	model := &relayload.Gateway{MeanGap: gap, ClientAddrs: true, ProtocolVersion: e.revision}
	require.NoError(t, relayload.Model(k, model, &upstream)) // BOT_SHARE, CALL_MEDIAN, TOOL_ERRORS, …
	k.Set("upstream_call", upstream.Call)
	// Each user holds its stream and may hold a request connection.
	opts := []fixtures.Option{fixtures.WithTarget(relayload.Service()), fixtures.WithDatabase(db), fixtures.WithUpstreamBehavior(upstream),
		fixtures.WithTargetEnv(relayEnv), fixtures.WithConnections(2 * top), fixtures.WithLimits(pod.cpus, pod.memory)}
	if pod.replicas > 0 {
		opts = append(opts, fixtures.WithReplicas(pod.replicas))
	}
	stack := fixtures.Start(t, opts...)
	pop := populate(t, k, stack, top, k.Int("USAGE_ROWS", "200000", "20000", 0), seed)
	hc := gatewayClient(t, stack, top)
	checkClientAddrs(t, stack, hc)

	model.URL, model.DashboardURL, model.HTTP, model.Token = stack.URL+"/mcp", stack.URL+"/api/dashboard", hc, pop.TokenOf
	gateway, err := model.Users()
	require.NoError(t, err)
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Workload: gateway, Plan: plan, Checks: gatewayBar(stack), Seed: seed,
		Samplers: relayMetrics(stack), Params: k.Params(),
		Drain: time.Duration(upstream.Call.Cap) + 5*time.Second,
		Reset: stack.Revive, // a probe that killed the relay does not leave the next a dead one
	}))
	t.Log(res.Ceiling())
	afterProbes(t, stack)
	if err := res.Err(); err != nil {
		t.Error(err)
	}
	return res
}
