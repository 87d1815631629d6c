package mcp_test

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/server"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/sse"
	"github.com/headroom-dev/headroom/mockupstream"
	"github.com/headroom-dev/headroom/seed"
)

// The gateway workload against the real relay (SQLite) and mock upstream:
// every user connects, holds its stream, calls tools and sees one event per
// call on its stream, with the fan-out delay measured.
func TestGatewayWorkloadAgainstTheRelay(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	up := mockupstream.StartT(t, mockupstream.Config{Logger: quiet, Behavior: mockupstream.Behavior{
		Seed: 1, ToolCount: 5, ToolErrors: 0.2, Sizes: []mockupstream.Size{{Weight: 1, Bytes: 256}}}})
	cfg := server.DefaultConfig()
	cfg.Logger = quiet
	cfg.SQLitePath = t.TempDir() + "/relay.db"
	relay, err := server.New(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { relay.Close() })
	ts := httptest.NewServer(relay.Handler())
	t.Cleanup(ts.Close)

	db, err := seed.Open(t.Context(), "sqlite:"+cfg.SQLitePath)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	spec := seed.Smoke
	spec.Secret = []byte("gateway test secret")
	spec.UpstreamURL = up.URL + "/mcp"
	spec.End = time.Now()
	pop, err := seed.Apply(t.Context(), db, spec)
	require.NoError(t, err)

	hc, err := httpc.New(httpc.Options{Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	fast, err := dist.CalibratedBursts(50*time.Millisecond, 200*time.Millisecond, 3, 300*time.Millisecond)
	require.NoError(t, err)
	g := &mcp.Gateway{
		URL: ts.URL + "/mcp", DashboardURL: ts.URL + "/api/dashboard", HTTP: hc,
		Token:     func(i int) string { return pop.Token(pop.Users[i%len(pop.Users)].ID) },
		Gaps:      fast,
		Reconnect: 2 * time.Second,
		Dashboard: 0.2,
	}
	users, err := g.Users()
	require.NoError(t, err)
	res, err := loadtest.Run(t.Context(), loadtest.Scenario{
		Workload: users,
		Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 8, Ramp: time.Second, Hold: 4 * time.Second}}},
		Checks: []loadtest.Check{
			loadtest.RateBelow(mcp.KindCallTool, loadtest.TransportError, 0.005),
			loadtest.RateBelow(mcp.KindCallTool, loadtest.AppError, 0.5),
			loadtest.LatencyBelow(sse.DefaultFanoutKind, 95, 5*time.Second),
		},
		SelfCheck: loadtest.SelfCheck{MaxCPU: -1},
		Drain:     5 * time.Second,
	})
	require.NoError(t, err)
	s := res.Steps[0]
	assert.Empty(t, s.Violations)
	calls := s.Kind(mcp.KindCallTool)
	require.NotNil(t, calls)
	assert.Greater(t, calls.Total(), int64(20), "users called tools")
	assert.Positive(t, calls.Outcomes[loadtest.AppError], "the upstream's tool errors come back as tool errors")
	assert.Positive(t, s.Kind(mcp.KindDashboard).Total(), "dashboard views")
	fanout := s.Kind(sse.DefaultFanoutKind)
	assert.InDelta(t, calls.Outcomes[loadtest.OK]+calls.Outcomes[loadtest.AppError], fanout.Total(), float64(calls.Total())/5+3,
		"about one event per call on the users' streams")
	assert.Zero(t, s.Kind(sse.KindDelivery).Total(), "no stream missed an event")
	stats, err := (&mockupstream.Client{BaseURL: up.URL}).Stats(t.Context())
	require.NoError(t, err)
	assert.Positive(t, stats.Served, "load reached the upstream")
}
