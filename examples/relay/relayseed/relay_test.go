package relayseed_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/examples/relay/server"
	"github.com/headroom-dev/headroom/mockupstream"
	"github.com/headroom-dev/headroom/seed"
)

// rpcReply is a JSON-RPC answer over HTTP.
type rpcReply struct {
	status int
	header http.Header
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// relayGet or relayRPC sends one request to the relay with a bearer token
// ("" for none).
func relayDo(t *testing.T, method, url, token string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(body))
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header, b
}

func relayRPC(t *testing.T, url, token, method string, params any) rpcReply {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	require.NoError(t, err)
	status, header, b := relayDo(t, http.MethodPost, url+"/mcp", token, body)
	r := rpcReply{status: status, header: header}
	if status == http.StatusOK {
		require.NoError(t, json.Unmarshal(b, &r), "%s", b)
	}
	return r
}

// TestRelayAcceptsSeededTokens seeds a population into the database the
// relay runs on and checks, through the relay's handler, that seeded tokens
// authenticate, other tokens get 401, the seeded connectors route to the
// upstream, the relay records a call as seed does, and the dashboard
// aggregates the seeded history.
func TestRelayAcceptsSeededTokens(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, d := range []string{"sqlite", "postgres"} {
		t.Run("dialect="+d, func(t *testing.T) {
			up := mockupstream.StartT(t, mockupstream.Config{Logger: quiet,
				Behavior: mockupstream.Behavior{Seed: 1, ToolCount: 20, Sizes: []mockupstream.Size{{Weight: 1, Bytes: 64}}}})
			cfg := server.DefaultConfig()
			cfg.Logger = quiet
			var dbURL string
			if d == "sqlite" {
				cfg.SQLitePath = t.TempDir() + "/relay.db"
				dbURL = "sqlite:" + cfg.SQLitePath
			} else {
				cfg.DatabaseURL = postgresURL(t)
				dbURL = cfg.DatabaseURL
			}
			// The relay applies its schema at start; seed fills it.
			relay, err := server.New(t.Context(), cfg)
			require.NoError(t, err)
			t.Cleanup(func() { relay.Close() })
			ts := httptest.NewServer(relay.Handler())
			t.Cleanup(ts.Close)

			target, err := seed.Open(t.Context(), dbURL)
			require.NoError(t, err)
			t.Cleanup(func() { target.Close() })
			spec := relayseed.Smoke
			spec.Secret = testSecret
			spec.UpstreamURL = up.URL + "/mcp"
			spec.End = time.Now()
			pop, err := relayseed.Apply(t.Context(), target, spec)
			require.NoError(t, err)
			u := pop.Users[3]
			token := pop.Token(u.ID)

			init := relayRPC(t, ts.URL, token, "initialize", map[string]any{"protocolVersion": "2025-03-26",
				"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "seed-test", "version": "1"}})
			require.Equal(t, http.StatusOK, init.status)
			assert.Nil(t, init.Error)
			assert.NotEmpty(t, init.header.Get(server.SessionHeader))

			list := relayRPC(t, ts.URL, token, "tools/list", map[string]any{})
			require.Equal(t, http.StatusOK, list.status)
			require.Nil(t, list.Error)
			var tools struct{ Tools []struct{ Name string } }
			require.NoError(t, json.Unmarshal(list.Result, &tools))
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			for _, c := range u.Connectors {
				for _, q := range c.QualifiedTools() {
					assert.Contains(t, names, q, "the relay lists seeded tool %s", q)
				}
			}

			tool := u.Connectors[1].QualifiedTools()[0]
			call := relayRPC(t, ts.URL, token, "tools/call", map[string]any{"name": tool, "arguments": map[string]any{"query": "x"}})
			require.Equal(t, http.StatusOK, call.status)
			require.Nil(t, call.Error)
			var res struct{ IsError bool }
			require.NoError(t, json.Unmarshal(call.Result, &res))
			assert.False(t, res.IsError, "%s", call.Result)

			for _, tc := range []struct {
				name, token string
			}{
				{"token=wrong-secret", relayseed.Token([]byte("not the secret"), u.ID)}, // another secret
				{"token=unknown-user", pop.Token(int64(len(pop.Users) + 1))},            // a user the population lacks
				{"token=none", ""}, // no Authorization header
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := relayRPC(t, ts.URL, tc.token, "tools/list", map[string]any{})
					assert.Equal(t, http.StatusUnauthorized, r.status)
				})
			}

			// The relay's dashboard over the last week sees the seeded week
			// plus the call just made, under the names seed recorded.
			status, _, body := relayDo(t, http.MethodGet, ts.URL+"/api/dashboard?window=8d", token, nil)
			require.Equal(t, http.StatusOK, status, "%s", body)
			var dash server.Dashboard
			require.NoError(t, json.Unmarshal(body, &dash))
			assert.Equal(t, int64(spec.UsageRows+1), dash.Calls)
			require.NotEmpty(t, dash.Tools)
			assert.Equal(t, "github__tool_01", dash.Tools[0].Tool, "the most popular seeded tool leads")
			assert.True(t, slices.ContainsFunc(dash.Tools, func(s server.ToolStats) bool { return s.Tool == tool }))
		})
	}
}
