package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/examples/relay/server"
)

// TestFlow walks a client's whole session: initialize, tools/list,
// tools/call, and the call's event on the user's stream and the
// workspace's feed, stamped with a sane written_at.
func TestFlow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		up := relaytest.Upstream(t, relaytest.Quick())
		r := startRelay(t, testConfig(t, dsn))
		alice, bob, carol := people(relaytest.MCPURL(up))
		r.DB.Insert(t, alice, bob, carol)

		init := r.rpc(t, alice.Token, "initialize", map[string]any{"protocolVersion": "2025-03-26",
			"capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "test", "version": "1"}})
		require.Equal(t, http.StatusOK, init.Status, "%s", init.Body)
		assert.NotEmpty(t, init.Header.Get(server.SessionHeader), "initialize answers a session id")
		var ir struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct{ Name string }
		}
		require.NoError(t, json.Unmarshal(init.Result, &ir))
		assert.Equal(t, "2025-03-26", ir.ProtocolVersion, "a supported version asked for is echoed")

		notif := relaytest.Post(t, t.Context(), r.Client, r.URL+"/mcp", alice.Token,
			[]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		assert.Equal(t, http.StatusAccepted, notif.Status)
		assert.Empty(t, notif.Body)

		list := r.rpc(t, alice.Token, "tools/list", nil)
		require.Nil(t, list.Error, "%s", list.Body)
		var tl struct {
			Tools []struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		require.NoError(t, json.Unmarshal(list.Result, &tl))
		var names []string
		for _, tool := range tl.Tools {
			names = append(names, tool.Name)
			assert.NotEmpty(t, tool.InputSchema, "fields other than name pass through")
		}
		assert.Equal(t, []string{"github__tool_01", "github__tool_02", "linear__tool_01", "linear__tool_02"}, names)
		assert.EqualValues(t, 2, up.Server.Stats().ByMethod["tools/list"], "one upstream tools/list per connector")

		aliceStream := r.stream(t, "/mcp", alice.Token)
		bobStream := r.stream(t, "/mcp", bob.Token)
		feed := r.stream(t, "/api/events", alice.Token)
		otherFeed := r.stream(t, "/api/events", carol.Token)

		before := time.Now()
		text, isErr := r.call(t, alice.Token, "linear__tool_02", map[string]any{"query": "x"})
		assert.False(t, isErr)
		assert.Len(t, text, 64, "the upstream's text passes through")

		var ids []string
		for name, s := range map[string]*relaytest.Stream{"user stream": aliceStream, "workspace feed": feed} {
			ev, ok := s.Next(t)
			require.True(t, ok, name)
			assert.Equal(t, "call", ev.Event, name)
			c := ev.Call(t)
			assert.Equal(t, ev.ID, jsonInt(c.ID), name+": SSE id is the event id")
			assert.Equal(t, int64(1), c.UserID, name)
			assert.Equal(t, int64(10), c.WorkspaceID, name)
			assert.Equal(t, "linear__tool_02", c.Tool, name)
			assert.Equal(t, "ok", c.Outcome, name)
			written, err := time.Parse(time.RFC3339Nano, c.WrittenAt)
			require.NoError(t, err, name)
			assert.False(t, written.Before(before.Truncate(time.Microsecond)), "%s: written_at %s before the call started %s", name, written, before)
			assert.False(t, written.After(ev.Received), "%s: written_at %s after receipt %s", name, written, ev.Received)
			ids = append(ids, ev.ID)
		}
		assert.Equal(t, ids[0], ids[1], "both feeds carry the same event")

		// bob's next event is his own call: alice's never reached him.
		b := relaytest.Quick()
		b.ToolErrors = 1
		require.NoError(t, up.Server.SetBehavior(b))
		_, isErr = r.call(t, bob.Token, "github__tool_01", nil)
		assert.True(t, isErr, "the upstream's isError passes through")
		ev, ok := bobStream.Next(t)
		require.True(t, ok)
		assert.Equal(t, int64(2), ev.Call(t).UserID)
		assert.Equal(t, "tool_error", ev.Call(t).Outcome)
		ev, ok = feed.Next(t)
		require.True(t, ok)
		assert.Equal(t, int64(2), ev.Call(t).UserID, "the workspace feed has every user of the workspace")

		// carol's feed's first event is her own: other workspaces stay apart.
		r.call(t, carol.Token, "github__tool_01", nil)
		ev, ok = otherFeed.Next(t)
		require.True(t, ok)
		assert.Equal(t, int64(3), ev.Call(t).UserID)

		assert.Equal(t, []string{"ok"}, r.usageOutcomes(t, 1))
		assert.Equal(t, []string{"tool_error"}, r.usageOutcomes(t, 2))
		st := r.Stats()
		assert.EqualValues(t, 2, st.UserStreams)
		assert.EqualValues(t, 2, st.WorkspaceStreams)
	})
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

// TestShutdownClosesStreams checks that a drain sends every open stream a
// final shutdown event and ends it.
func TestShutdownClosesStreams(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		r := startRelay(t, testConfig(t, dsn))
		alice, _, _ := people("http://127.0.0.1:9/mcp")
		r.DB.Insert(t, alice)
		s1 := r.stream(t, "/mcp", alice.Token)
		s2 := r.stream(t, "/api/events", alice.Token)

		rep, err := r.Shutdown(t.Context())
		require.NoError(t, err)
		assert.EqualValues(t, 2, rep.Streams)
		assert.Zero(t, rep.Abandoned)
		for _, s := range []*relaytest.Stream{s1, s2} {
			ev, ok := s.Next(t)
			require.True(t, ok)
			assert.Equal(t, "shutdown", ev.Event)
			_, ok = s.Next(t)
			assert.False(t, ok, "the stream ends after the shutdown event")
		}
		status, _ := r.get(t, "/readyz", "")
		assert.Equal(t, http.StatusServiceUnavailable, status, "not ready once drained")
	})
}
