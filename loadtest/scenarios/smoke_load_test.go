//go:build load

package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/sse"
	"github.com/headroom-dev/headroom/mockupstream"
)

// TestLoad_Smoke checks that one relay instance (1 CPU / 512 MiB) on
// PostgreSQL or on its embedded SQLite, reached through Caddy over HTTPS,
// holds a ladder of modeled gateway users — each holding its notification
// stream and making bursty tool calls, listings and dashboard views
// against the calibrated slow upstream, over a seeded population — while
// tool calls keep a p95 under 15 s, calls without an answer (transport
// errors, timeouts, 5xx, shed load) stay under 0.5%, tool errors under 15%
// (8% are modeled), every completed call reaches its user's stream, and no
// stream misses a keepalive.
//
// Knobs: USERS (levels), RAMP, HOLD, GAP (a user's mean gap between
// calls), SEED, LOADTEST_BACKEND, LOADTEST_DB. With -short the ladder is
// small, calls are frequent and the upstream fast, for under a minute of
// load on each backend and database; latency bars are then left out so
// that the short run cannot flake, and correctness checks stay.
func TestLoad_Smoke(t *testing.T) {
	besideOthers(t)
	for _, backend := range fixtures.Backends(t) {
		t.Run("backend="+backend, func(t *testing.T) {
			for _, db := range fixtures.DatabasesFor(t, backend) {
				t.Run("db="+string(db), func(t *testing.T) { smoke(t, backend, db) })
			}
		})
	}
}

func smoke(t *testing.T, backend string, db fixtures.Database) {
	k := loadtest.NewKnobs(t).For(backend)
	users := k.Levels("USERS", "200,400,800", "20,40,80")
	ramp, hold := k.DurationOrZero("RAMP", "30s", "3s"), k.Duration("HOLD", "90s", "6s")
	gap, seed := k.Duration("GAP", "90s", "1s"), k.Uint("SEED", "1", "1")
	top := int(users[len(users)-1])

	upstream := mockupstream.Calibrated() // log-normal calls: median 1.2 s, 5% over 12 s, capped at 50 s
	upstream.Seed = seed
	if testing.Short() {
		upstream.Call = mockupstream.Latency{Median: mockupstream.Duration(200 * time.Millisecond),
			P95: mockupstream.Duration(2 * time.Second), Cap: mockupstream.Duration(5 * time.Second)}
	}
	k.Set("upstream_call", upstream.Call)
	stack := fixtures.Start(t, fixtures.WithTarget(relayload.Service()),
		fixtures.WithBackend(backend), fixtures.WithDatabase(db), fixtures.WithUpstreamBehavior(upstream),
		fixtures.WithTargetEnv(map[string]string{"RELAY_METRICS": "1"}))

	// Enough users for the top step, with a month of usage for the dashboard.
	spec := relayseed.Smoke.ForUsers(top)
	spec.UsageRows, spec.End, spec.Seed, spec.Secret = 200_000, time.Now().Truncate(time.Hour), seed, []byte("smoke")
	spec.UpstreamURL = stack.UpstreamURLFromTarget + "/mcp"
	if testing.Short() {
		spec.UsageRows = 20_000
	}
	pop := relayseed.Populate(t, stack.SeedURL(), spec)
	k.Set("population", pop)

	// One connection per user at the top step: users never queue for one.
	hc, err := httpc.New(httpc.Options{RootCAPEM: stack.CACertPEM, Timeout: time.Minute, MaxConnsPerHost: top + top/10})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	gateway, err := (&relayload.Gateway{URL: stack.URL + "/mcp", DashboardURL: stack.URL + "/api/dashboard",
		HTTP: hc, Token: pop.TokenOf, MeanGap: gap}).Users()
	require.NoError(t, err)

	checks := []loadtest.Check{
		loadtest.FailuresBelow(mcp.KindCallTool, 0.005, loadtest.AppError), // no answer: transport, timeout, 5xx, shed
		// The upstream's tool errors (8% modeled): shown above 15%, not
		// scattered there by a short step's few calls.
		loadtest.Rate{Kind: mcp.KindCallTool, Outcome: loadtest.AppError, Max: 0.15, Alpha: 0.001},
		loadtest.RateBelow("", loadtest.HTTP5xx, 0.005),
		loadtest.FailuresBelow(sse.KindDelivery, 0.001), // every completed call reaches its stream
		sse.Healthy(),
		stack.ComponentsUp(),
	}
	if !testing.Short() {
		checks = append(checks, loadtest.LatencyBelow(mcp.KindCallTool, 95, 15*time.Second),
			loadtest.LatencyBelow(sse.DefaultFanoutKind, 95, time.Second))
	}
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Workload: gateway, Plan: loadtest.Levels(ramp, hold, users...), Checks: checks, Seed: seed,
		// Beside the stack's samplers and the relay's profiles, its own
		// metrics: streams, requests in flight, database connections, Go heap.
		Samplers: relayMetrics(stack), Params: k.Params(),
		Drain: time.Duration(upstream.Call.Cap) + 5*time.Second, // calls of the hold may take the upstream's cap
	}))
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}
