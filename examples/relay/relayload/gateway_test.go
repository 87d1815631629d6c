package relayload_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/examples/relay/relayseed"
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
	spec := relayseed.Smoke
	spec.Secret = []byte("gateway test secret")
	spec.UpstreamURL = up.URL + "/mcp"
	spec.End = time.Now()
	pop, err := relayseed.Apply(t.Context(), db, spec)
	require.NoError(t, err)

	hc, err := httpc.New(httpc.Options{Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	fast, err := dist.CalibratedBursts(50*time.Millisecond, 200*time.Millisecond, 3, 300*time.Millisecond)
	require.NoError(t, err)
	g := &relayload.Gateway{
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
	assert.Positive(t, s.Kind(relayload.KindDashboard).Total(), "dashboard views")
	fanout := s.Kind(sse.DefaultFanoutKind)
	assert.InDelta(t, calls.Outcomes[loadtest.OK]+calls.Outcomes[loadtest.AppError], fanout.Total(), float64(calls.Total())/5+3,
		"about one event per call on the users' streams")
	delivery := s.Kind(sse.KindDelivery)
	require.NotNil(t, delivery, "one delivery sample per completed call")
	assert.Zero(t, delivery.Outcomes[loadtest.AppError], "no stream missed an event: %v", delivery.Errors)
	assert.Positive(t, delivery.Outcomes[loadtest.OK])
	stats, err := (&mockupstream.Client{BaseURL: up.URL}).Stats(t.Context())
	require.NoError(t, err)
	assert.Positive(t, stats.Served, "load reached the upstream")
}

// announcer is a relay-like MCP gateway reduced to what the gateway
// workload needs: initialize, tools/list (one tool), tools/call (always a
// result) and each user's notification stream, on which it announces every
// completed call before answering it, as the relay does — unless drop is
// set, when the calls complete but their events are lost.
type announcer struct {
	drop bool

	mu      sync.Mutex
	streams map[string]map[chan struct{}]bool // by bearer token
}

// rpcRequest is what the stand-ins read of a JSON-RPC request.
type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// readRPC reads r's JSON-RPC request, answering 400 to a body that is not.
func readRPC(w http.ResponseWriter, r *http.Request) (rpcRequest, bool) {
	var req rpcRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return req, false
	}
	return req, true
}

func (a *announcer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if r.Method == http.MethodGet {
		a.stream(w, r, token)
		return
	}
	req, ok := readRPC(w, r)
	if !ok {
		return
	}
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": v})
	}
	switch req.Method {
	case "initialize":
		w.Header().Set(mcp.SessionHeader, "session-"+token)
		reply(map[string]any{"protocolVersion": mcp.DefaultProtocolVersion})
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		reply(map[string]any{"tools": []map[string]any{{"name": "up__echo", "inputSchema": map[string]any{"type": "object"}}}})
	case "tools/call":
		if !a.drop {
			a.mu.Lock()
			for ch := range a.streams[token] {
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			a.mu.Unlock()
		}
		reply(map[string]any{"content": []map[string]string{{"type": "text", "text": "ok"}}})
	default:
		http.Error(w, "unknown method", http.StatusBadRequest)
	}
}

func (a *announcer) stream(w http.ResponseWriter, r *http.Request, token string) {
	ch := make(chan struct{}, 64)
	a.mu.Lock()
	if a.streams == nil {
		a.streams = map[string]map[chan struct{}]bool{}
	}
	if a.streams[token] == nil {
		a.streams[token] = map[chan struct{}]bool{}
	}
	a.streams[token][ch] = true
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.streams[token], ch)
		a.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	_, _ = fmt.Fprint(w, ": keepalive\n\n")
	_ = rc.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ch:
			_, _ = fmt.Fprintf(w, "event: call\ndata: {\"written_at\":%q}\n\n", time.Now().UTC().Format(time.RFC3339Nano))
			_ = rc.Flush()
		}
	}
}

// TestGatewayWorkload_StreamDelivery runs the gateway workload through the
// core against a gateway that announces every call, and one that completes
// calls but loses their events: the check "every completed call reaches its
// user's stream" passes on the first and fails on the second, with the
// missing events as AppError delivery samples inside the step's hold.
func TestGatewayWorkload_StreamDelivery(t *testing.T) {
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("drop=%t", drop), func(t *testing.T) {
			srv := httptest.NewServer(&announcer{drop: drop})
			t.Cleanup(srv.Close)
			hc, err := httpc.New(httpc.Options{Timeout: 5 * time.Second})
			require.NoError(t, err)
			t.Cleanup(hc.Close)
			fast, err := dist.CalibratedBursts(50*time.Millisecond, 200*time.Millisecond, 3, 300*time.Millisecond)
			require.NoError(t, err)
			g := &relayload.Gateway{
				URL: srv.URL + "/mcp", HTTP: hc,
				Token:           func(i int) string { return fmt.Sprintf("user-%d", i) },
				Gaps:            fast,
				BotShare:        -1,
				Reconnect:       -1,
				DeliveryTimeout: 500 * time.Millisecond,
			}
			users, err := g.Users()
			require.NoError(t, err)
			delivered := loadtest.RateBelow(sse.KindDelivery, loadtest.AppError, 0.01)
			res, err := loadtest.Run(t.Context(), loadtest.Scenario{
				Workload:  users,
				Plan:      loadtest.Ladder{Steps: []loadtest.Step{{Level: 4, Ramp: 200 * time.Millisecond, Hold: 2 * time.Second}}},
				Checks:    []loadtest.Check{delivered},
				SelfCheck: loadtest.SelfCheck{MaxCPU: -1},
				Drain:     time.Second,
			})
			require.NoError(t, err)
			s := res.Steps[0]
			calls := s.Kind(mcp.KindCallTool)
			require.NotNil(t, calls)
			require.Greater(t, calls.Outcomes[loadtest.OK], int64(10), "users called tools")
			d := s.Kind(sse.KindDelivery)
			require.NotNil(t, d)
			t.Logf("tools/call %v; %s %v %v; violations %q", calls.Outcomes, sse.KindDelivery, d.Outcomes, d.Latency, s.Violations)
			require.Positive(t, d.Total(), "delivery samples inside the step")
			if !drop {
				assert.Empty(t, s.Violations)
				assert.Zero(t, d.Outcomes[loadtest.AppError], "%v", d.Errors)
				assert.InDelta(t, calls.Outcomes[loadtest.OK], d.Outcomes[loadtest.OK], float64(calls.Total())/4+3,
					"about one OK delivery sample per completed call")
				return
			}
			assert.Zero(t, d.Outcomes[loadtest.OK])
			assert.GreaterOrEqual(t, d.Outcomes[loadtest.AppError], calls.Outcomes[loadtest.OK]/2,
				"about one AppError delivery sample per completed call")
			require.NotEmpty(t, d.Errors)
			assert.Contains(t, d.Errors[0], "has not arrived; stream connected")
			require.NotEmpty(t, s.Violations, "the delivery check fails")
			assert.Contains(t, strings.Join(s.Violations, "\n"), sse.KindDelivery)
		})
	}
}

// TestGateway_IdleUsersWithClientAddrs: idle users connect and hold their
// stream without a call; with ClientAddrs each user's requests and stream
// carry its own X-Forwarded-For. Without either option the same run makes
// calls and sends no header, so both assertions can fail.
func TestGateway_IdleUsersWithClientAddrs(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("options=%t", on), func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]map[string]bool{} // method → X-Forwarded-For values
			a := &announcer{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				if seen[r.Method] == nil {
					seen[r.Method] = map[string]bool{}
				}
				seen[r.Method][r.Header.Get("X-Forwarded-For")] = true
				mu.Unlock()
				a.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)
			hc, err := httpc.New(httpc.Options{Timeout: 5 * time.Second})
			require.NoError(t, err)
			t.Cleanup(hc.Close)
			fast, err := dist.CalibratedBursts(50*time.Millisecond, 200*time.Millisecond, 3, 300*time.Millisecond)
			require.NoError(t, err)
			g := &relayload.Gateway{URL: srv.URL + "/mcp", HTTP: hc, Gaps: fast, BotShare: -1, Reconnect: -1,
				Token: func(i int) string { return fmt.Sprintf("user-%d", i) }, Idle: on, ClientAddrs: on}
			users, err := g.Users()
			require.NoError(t, err)
			res, err := loadtest.Run(t.Context(), loadtest.Scenario{
				Workload:  users,
				Plan:      loadtest.Ladder{Steps: []loadtest.Step{{Level: 3, Ramp: 100 * time.Millisecond, Hold: time.Second}}},
				SelfCheck: loadtest.SelfCheck{MaxCPU: -1},
				Drain:     time.Second,
			})
			require.NoError(t, err)
			var calls int64
			for _, s := range res.Steps {
				if k := s.Kind(mcp.KindCallTool); k != nil {
					calls += k.Total()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !on {
				assert.Positive(t, calls)
				assert.Equal(t, map[string]map[string]bool{"POST": {"": true}, "GET": {"": true}}, seen)
				return
			}
			assert.Zero(t, calls, "idle users make no call")
			want := map[string]bool{httpc.ClientAddr(0): true, httpc.ClientAddr(1): true, httpc.ClientAddr(2): true}
			assert.Equal(t, map[string]map[string]bool{"POST": want, "GET": want}, seen, "each user's requests (POST) and stream (GET) carry its address")
		})
	}
}
