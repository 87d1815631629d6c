//go:build load

package scenarios

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/prom"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// The seed-000 scenarios (the knee, the rate ceilings, idle streams) share
// their set-up here; TestLoad_Smoke spells its own out, as the README's
// complete example.

// relayEnv turns on the relay's Prometheus metrics, which relayMetrics
// read.
var relayEnv = map[string]string{"RELAY_METRICS": "1"}

// relayMetrics samples, beside what the stack samples (stack.Scenario),
// the relay's own view: goroutines, Go heap and stacks, held streams,
// requests in flight, database connections in use and requests answered.
func relayMetrics(stack *fixtures.Stack) []loadtest.Sampler {
	return []loadtest.Sampler{&prom.Sampler{URL: stack.TargetURL + "/metrics", Component: "relay",
		Series: append([]prom.Series{
			{Metric: "relay_held_streams", Labels: map[string]string{"kind": "user"}, Name: "held_streams"},
			{Metric: "relay_inflight_requests", Name: "inflight_requests"},
			{Metric: "relay_db_connections", Labels: map[string]string{"state": "in_use"}, Name: "db_in_use"},
			{Metric: "relay_http_requests_total", Name: "requests_total"},
		}, prom.GoRuntime...)}}
}

// afterProbes logs every component that stopped during a search, and so
// reads them: a knee search takes the target to its limit on purpose, and
// a relay that dies seconds after its last probe was judged, under that
// probe's requests, is its aftermath, not a failure nobody saw (which
// fixtures report at teardown).
func afterProbes(t *testing.T, stack *fixtures.Stack) {
	for _, f := range stack.Failures() {
		t.Logf("during the search, at %s: %s stopped: %s", f.At.Format(time.TimeOnly), f.Component, f.Reason)
	}
}

// populate seeds users users (each with the seed's five connectors to the
// stack's mock upstream) and rows recorded tool calls over the month
// before now.
func populate(t *testing.T, k *loadtest.Knobs, stack *fixtures.Stack, users, rows int, seed uint64) *relayseed.Population {
	spec := relayseed.Smoke.ForUsers(users)
	spec.UsageRows, spec.End, spec.Seed, spec.Secret = rows, time.Now().Truncate(time.Hour), seed, []byte("seed-000")
	spec.UpstreamURL = stack.UpstreamURLFromTarget + "/mcp"
	pop := relayseed.Populate(t, stack.SeedURL(), spec)
	k.Set("population", pop)
	return pop
}

// gatewayClient is the generator's HTTP client for users modeled users:
// it trusts the stack's CA, spreads its connections over the entry point's
// published ports, and may open one request connection per user.
func gatewayClient(t *testing.T, stack *fixtures.Stack, users int) *httpc.Client {
	o := stack.ClientOptions()
	o.Timeout, o.MaxConnsPerHost = time.Minute, users+users/10
	hc, err := httpc.New(o)
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	return hc
}

// checkClientAddrs stops the test unless the relay, through Caddy, sees the
// client address a modeled user sends: otherwise every user would be one
// client to it.
func checkClientAddrs(t *testing.T, stack *fixtures.Stack, hc *httpc.Client) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	require.NoError(t, httpc.CheckForwardedFor(ctx, hc, stack.URL+"/api/whoami", ""),
		"the relay must see each modeled user's address through Caddy: Caddy's trusted_proxies and RELAY_TRUSTED_PROXIES must trust the generator's and Caddy's addresses")
}

// era is an MCP protocol era the seed compares, for subtests "era=…":
// the handshake revisions (initialize, a GET stream) or the stateless
// revision (server/discover, subscriptions/listen streams).
type era struct {
	name     string
	revision string // relayload.Gateway.ProtocolVersion
}

var (
	handshakeEra = era{"handshake", mcp.DefaultProtocolVersion}
	statelessEra = era{"stateless", mcp.StatelessVersion}
)

// eras returns the eras a gateway scenario runs in: LOADTEST_ERA when it
// names one (handshake, stateless) or "all"; otherwise the handshake era,
// the headline's, and under -short with LOADTEST_MATRIX=full both. An
// unknown value fails the test at once.
func eras(t *testing.T) []era {
	t.Helper()
	switch v := os.Getenv("LOADTEST_ERA"); v {
	case handshakeEra.name:
		return []era{handshakeEra}
	case statelessEra.name:
		return []era{statelessEra}
	case "all":
		return []era{handshakeEra, statelessEra}
	case "":
	default:
		t.Fatalf("LOADTEST_ERA=%q: give handshake, stateless or all", v)
	}
	if testing.Short() && fixtures.FullMatrix(t) {
		return []era{handshakeEra, statelessEra}
	}
	return []era{handshakeEra}
}

// gatewayBar is the published pass/fail bar of a gateway pod: tool calls'
// p95 under 15 s (the modeled upstream alone has a ~12 s p95), calls
// without an answer (transport errors, timeouts, 5xx, shed load) under
// 0.5%, tool errors under 15% (8% modeled), every completed call on its
// user's stream, healthy keepalives, no component down. -short runs keep
// the correctness bars only.
func gatewayBar(stack *fixtures.Stack) []loadtest.Check {
	checks := []loadtest.Check{
		loadtest.FailuresBelow(mcp.KindCallTool, 0.005, loadtest.AppError),
		// The upstream's tool errors (8% modeled): shown above 15%, not
		// scattered there by a short step's few calls.
		loadtest.Rate{Kind: mcp.KindCallTool, Outcome: loadtest.AppError, Max: 0.15, Alpha: 0.001},
		loadtest.RateBelow("", loadtest.HTTP5xx, 0.005),
		loadtest.FailuresBelow(sse.KindDelivery, 0.001),
		sse.Healthy(),
		stack.ComponentsUp(),
	}
	if !testing.Short() {
		checks = append(checks, loadtest.LatencyBelow(mcp.KindCallTool, 95, 15*time.Second))
	}
	return checks
}
