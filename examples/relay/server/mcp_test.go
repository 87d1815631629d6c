package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/examples/relay/server"
)

// TestBadInput checks the answers to malformed and invalid requests.
func TestBadInput(t *testing.T) {
	up := relaytest.Upstream(t, relaytest.Quick())
	cfg := testConfig(t, t.TempDir()+"/relay.db")
	cfg.MaxBodyBytes = 4096
	r := startRelay(t, cfg)
	alice, _, _ := people(relaytest.MCPURL(up))
	r.DB.Insert(t, alice)

	tests := []struct {
		name    string
		body    string
		status  int
		code    int    // JSON-RPC error code; 0 for none
		id      string // the id the answer carries
		message string // part of the error message
	}{
		// Not JSON at all.
		{name: "truncated", body: `{"jsonrpc":"2.0","id":1,"method":`, status: 400, code: server.CodeParseError, id: "null", message: "not valid JSON"},
		// JSON, but an array: batches are refused.
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, status: 400, code: server.CodeInvalidRequest, id: "null", message: "batch"},
		// JSON, but not an object.
		{name: "string", body: `"ping"`, status: 400, code: server.CodeInvalidRequest, id: "null"},
		// The wrong protocol version.
		{name: "jsonrpc_1", body: `{"jsonrpc":"1.0","id":7,"method":"ping"}`, status: 400, code: server.CodeInvalidRequest, id: "7", message: `"2.0"`},
		// No method.
		{name: "no_method", body: `{"jsonrpc":"2.0","id":"a"}`, status: 400, code: server.CodeInvalidRequest, id: `"a"`, message: "method"},
		// A method that is not a string.
		{name: "method_number", body: `{"jsonrpc":"2.0","id":2,"method":5}`, status: 400, code: server.CodeInvalidRequest, id: "2"},
		// An id that is an object.
		{name: "object_id", body: `{"jsonrpc":"2.0","id":{},"method":"ping"}`, status: 400, code: server.CodeInvalidRequest, id: "null", message: "id"},
		// A method the relay does not serve.
		{name: "unknown_method", body: `{"jsonrpc":"2.0","id":3,"method":"resources/list"}`, status: 200, code: server.CodeMethodNotFound, id: "3", message: "resources/list"},
		// tools/call without params.
		{name: "call_no_params", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call"}`, status: 200, code: server.CodeInvalidParams, id: "4", message: "required"},
		// tools/call with params as an array.
		{name: "call_array_params", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":["x"]}`, status: 200, code: server.CodeInvalidParams, id: "4", message: "object"},
		// tools/call with a name of the wrong type.
		{name: "call_name_number", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":1}}`, status: 200, code: server.CodeInvalidParams, id: "4"},
		// tools/call with arguments that are not an object.
		{name: "call_arguments_string", body: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"github__tool_01","arguments":"x"}}`, status: 200, code: server.CodeInvalidParams, id: "4", message: "arguments"},
		// tools/call of a connector the user does not have.
		{name: "unknown_connector", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"jira__tool_01"}}`, status: 200, code: server.CodeInvalidParams, id: "5", message: "unknown tool"},
		// tools/call of a name without the connector prefix.
		{name: "unprefixed_tool", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"tool_01"}}`, status: 200, code: server.CodeInvalidParams, id: "5", message: "<connector>__<tool>"},
		// A body over RELAY_MAX_BODY_BYTES.
		{name: "too_large", body: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"github__tool_01","arguments":{"q":"` + strings.Repeat("x", 5000) + `"}}}`, status: 413, code: server.CodeInvalidRequest, id: "null", message: "RELAY_MAX_BODY_BYTES"},
		// A ping is fine, and a string id is kept.
		{name: "ping", body: `{"jsonrpc":"2.0","id":"p-1","method":"ping"}`, status: 200, id: `"p-1"`},
		// A notification gets 202 and no body.
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/whatever"}`, status: 202},
	}
	for _, tc := range tests {
		t.Run("input="+tc.name, func(t *testing.T) {
			rep := relaytest.Post(t, t.Context(), r.Client, r.URL+"/mcp", alice.Token, []byte(tc.body))
			assert.Equal(t, tc.status, rep.Status, "%s", rep.Body)
			if tc.status == http.StatusAccepted {
				assert.Empty(t, rep.Body)
				return
			}
			var envelope struct {
				JSONRPC string
				ID      any
			}
			require.NoError(t, jsonUnmarshal(rep.Body, &envelope), "%s", rep.Body)
			assert.Equal(t, "2.0", envelope.JSONRPC)
			assert.Contains(t, string(rep.Body), `"id":`+tc.id)
			if tc.code == 0 {
				assert.Nil(t, rep.Error)
				return
			}
			require.NotNil(t, rep.Error, "%s", rep.Body)
			assert.Equal(t, tc.code, rep.Error.Code)
			assert.Contains(t, rep.Error.Message, tc.message)
		})
	}
	assert.Zero(t, up.Server.Stats().ByMethod["tools/call"], "no bad request reached the upstream")
}

// TestAuthFailures checks that every endpoint but the probes wants a
// known bearer token, and answers 401 with a WWW-Authenticate header.
func TestAuthFailures(t *testing.T) {
	r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
	alice, _, _ := people("http://127.0.0.1:9/mcp")
	r.DB.Insert(t, alice)

	type req struct{ method, path string }
	endpoints := []req{{"POST", "/mcp"}, {"GET", "/mcp"}, {"GET", "/api/events"}, {"GET", "/api/dashboard"}}
	tests := []struct {
		name   string
		header string // the Authorization header; "" sends none
	}{
		// No header at all.
		{name: "missing", header: ""},
		// Another scheme.
		{name: "basic", header: "Basic YWxpY2U6cHc="},
		// The scheme without a token.
		{name: "empty_bearer", header: "Bearer "},
		// A token nobody has.
		{name: "unknown", header: "Bearer not-a-token"},
		// The token's hash instead of the token.
		{name: "hash", header: "Bearer " + schema.TokenHash("alice-token")},
	}
	for _, tc := range tests {
		for _, ep := range endpoints {
			t.Run("auth="+tc.name+"/endpoint="+ep.method+ep.path, func(t *testing.T) {
				rq, err := http.NewRequest(ep.method, r.URL+ep.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
				require.NoError(t, err)
				rq.Header.Set("Accept", "text/event-stream, application/json")
				if tc.header != "" {
					rq.Header.Set("Authorization", tc.header)
				}
				resp, err := r.Client.Do(rq)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
				assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
			})
		}
	}
	t.Run("auth=lowercase_scheme", func(t *testing.T) {
		rq, _ := http.NewRequest("POST", r.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		rq.Header.Set("Authorization", "bearer "+alice.Token)
		resp, err := r.Client.Do(rq)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "the scheme is case-insensitive")
	})
}

// TestAuthCache checks that a validated token is remembered for the cache
// TTL, and that the auth-no-cache fault asks the database every time.
func TestAuthCache(t *testing.T) {
	tests := []struct {
		name      string
		noCache   bool
		wantAfter int // status once the user row is gone
	}{
		// The cache (TTL one hour here) still knows the token.
		{name: "cached", wantAfter: http.StatusOK},
		// Every request queries: the deleted user is refused at once.
		{name: "auth-no-cache", noCache: true, wantAfter: http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run("fault="+tc.name, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir()+"/relay.db")
			cfg.AuthCacheTTL = time.Hour
			cfg.Faults.AuthNoCache = tc.noCache
			r := startRelay(t, cfg)
			alice, _, _ := people("http://127.0.0.1:9/mcp")
			r.DB.Insert(t, alice)
			require.Equal(t, http.StatusOK, r.rpc(t, alice.Token, "ping", nil).Status)
			_, err := r.DB.Exec(`DELETE FROM users WHERE id = 1`)
			require.NoError(t, err)
			assert.Equal(t, tc.wantAfter, r.rpc(t, alice.Token, "ping", nil).Status)
		})
	}
}
