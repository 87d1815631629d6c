package server_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/examples/relay/server"
)

// TestListCache checks RELAY_LIST_CACHE_TTL: a second listing within the
// TTL is answered without asking the upstream, with the same tools; with
// no TTL every listing asks it.
func TestListCache(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Minute} {
		t.Run("ttl="+ttl.String(), func(t *testing.T) {
			up := relaytest.Upstream(t, relaytest.Quick())
			cfg := testConfig(t, filepath.Join(t.TempDir(), "relay.db"))
			cfg.ListCacheTTL = ttl
			r := startRelay(t, cfg)
			alice, _, _ := people(relaytest.MCPURL(up))
			r.DB.Insert(t, alice)
			first := r.rpc(t, alice.Token, "tools/list", nil)
			require.Nil(t, first.Error, "%s", first.Body)
			asked := up.Server.Stats().ByMethod["tools/list"]
			second := r.rpc(t, alice.Token, "tools/list", nil)
			require.Nil(t, second.Error, "%s", second.Body)
			assert.JSONEq(t, string(first.Result), string(second.Result))
			if ttl > 0 {
				assert.Equal(t, asked, up.Server.Stats().ByMethod["tools/list"], "a hit does not ask the upstream")
			} else {
				assert.Equal(t, 2*asked, up.Server.Stats().ByMethod["tools/list"], "without a cache every listing asks every connector")
			}
		})
	}
}

// syncBuffer is a log sink tests read while the relay writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestCallTrace checks RELAY_CALL_TRACE: off writes no trace record,
// sampled one per TraceEvery calls, full one per call, each with the
// call's spans.
func TestCallTrace(t *testing.T) {
	tests := []struct {
		mode string
		want int // records for 6 calls, one in 3 sampled
	}{
		{server.TraceOff, 0},
		{server.TraceSampled, 2},
		{server.TraceFull, 6},
	}
	for _, tc := range tests {
		t.Run("trace="+tc.mode, func(t *testing.T) {
			up := relaytest.Upstream(t, relaytest.Quick())
			cfg := testConfig(t, filepath.Join(t.TempDir(), "relay.db"))
			var logs syncBuffer
			cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			cfg.CallTrace, cfg.TraceEvery = tc.mode, 3
			r := startRelay(t, cfg)
			alice, _, _ := people(relaytest.MCPURL(up))
			r.DB.Insert(t, alice)
			for range 6 {
				_, isErr := r.call(t, alice.Token, "github__tool_01", nil)
				require.False(t, isErr)
			}
			var records []map[string]any
			for line := range strings.Lines(logs.String()) {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == "relay: call trace" {
					records = append(records, m)
				}
			}
			require.Len(t, records, tc.want)
			for _, m := range records {
				assert.Equal(t, "github__tool_01", m["tool"])
				assert.Equal(t, "ok", m["outcome"])
				assert.Equal(t, tc.mode, m["sampling"])
				assert.NotEmpty(t, m["trace_id"])
				for _, f := range []string{"duration_us", "upstream_us", "record_us"} {
					assert.Contains(t, m, f)
				}
			}
		})
	}
}
