package server_test

import (
	"net/http"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
)

// TestStreamNeedsEventStreamAccept checks that a GET without Accept:
// text/event-stream is refused with 406, and a bad Last-Event-ID with 400.
func TestStreamNeedsEventStreamAccept(t *testing.T) {
	r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
	alice, _, _ := people("http://127.0.0.1:9/mcp")
	r.DB.Insert(t, alice)
	for _, path := range []string{"/mcp", "/api/events"} {
		t.Run("path="+path, func(t *testing.T) {
			status, _ := r.get(t, path, alice.Token)
			assert.Equal(t, http.StatusNotAcceptable, status)
			_, status = relaytest.TryStream(t, r.Client, r.URL+path, alice.Token, "Last-Event-ID", "x")
			assert.Equal(t, http.StatusBadRequest, status)
		})
	}
}

// TestStreamReplay checks that a stream opened with Last-Event-ID first
// gets the events written after that id, then live ones, each once.
func TestStreamReplay(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		up := relaytest.Upstream(t, relaytest.Quick())
		r := startRelay(t, testConfig(t, dsn))
		alice, bob, _ := people(relaytest.MCPURL(up))
		r.DB.Insert(t, alice, bob)
		live := r.stream(t, "/api/events", alice.Token)
		var ids []string
		for _, u := range []relaytest.User{alice, bob, alice, bob} {
			r.call(t, u.Token, "github__tool_01", nil)
			ev, ok := live.Next(t)
			require.True(t, ok)
			ids = append(ids, ev.ID)
		}

		// alice's stream resumes after her first event: her second only.
		mine := r.stream(t, "/mcp", alice.Token, "Last-Event-ID", ids[0])
		ev, ok := mine.Next(t)
		require.True(t, ok)
		assert.Equal(t, ids[2], ev.ID)
		// The workspace feed resumes after the second event: the last two.
		feed := r.stream(t, "/api/events", alice.Token, "Last-Event-ID", ids[1])
		for _, want := range ids[2:] {
			ev, ok := feed.Next(t)
			require.True(t, ok)
			assert.Equal(t, want, ev.ID)
		}
		// Then live events follow on both.
		r.call(t, alice.Token, "github__tool_02", nil)
		ev1, _ := mine.Next(t)
		ev2, _ := feed.Next(t)
		assert.Equal(t, ev1.ID, ev2.ID)
		n1, _ := strconv.Atoi(ev1.ID)
		n0, _ := strconv.Atoi(ids[3])
		assert.Greater(t, n1, n0, "a new event, not a replayed one again")
	})
}

// TestStreamKeepalive checks the keepalive comment on an idle stream.
func TestStreamKeepalive(t *testing.T) {
	cfg := testConfig(t, t.TempDir()+"/relay.db")
	cfg.KeepaliveInterval = 20 * time.Millisecond
	r := startRelay(t, cfg)
	alice, _, _ := people("http://127.0.0.1:9/mcp")
	r.DB.Insert(t, alice)
	s := r.stream(t, "/mcp", alice.Token)
	first, ok := s.NextAny(t)
	require.True(t, ok)
	assert.Equal(t, "connected", first.Comment)
	next, ok := s.NextAny(t)
	require.True(t, ok)
	assert.Equal(t, "keepalive", next.Comment)
}

// TestIdleStreamsHoldNoGoroutine checks that a held stream — GET /mcp, or
// a subscriptions/listen request's answer — costs no goroutine (the
// connection is hijacked and parked in the hub), unlike the
// stream-goroutine fault's plain net/http way; and that streams whose
// clients left are closed at the next keepalive.
func TestIdleStreamsHoldNoGoroutine(t *testing.T) {
	for _, kind := range []string{"get", "listen"} {
		t.Run("stream="+kind, func(t *testing.T) { testIdleStreamsHoldNoGoroutine(t, kind) })
	}
}

func testIdleStreamsHoldNoGoroutine(t *testing.T, kind string) {
	const n = 40
	tests := []struct {
		mode          string
		goroutineMode bool
		minPerStream  float64 // goroutines per stream, at least
		maxPerStream  float64 // and at most
	}{
		// Hijacked: nothing per stream.
		{mode: "hijack", maxPerStream: 0.1},
		// Held by net/http: the handler and the connection's reader.
		{mode: "goroutine", goroutineMode: true, minPerStream: 1, maxPerStream: 3},
	}
	for _, tc := range tests {
		t.Run("mode="+tc.mode, func(t *testing.T) {
			cfg := testConfig(t, t.TempDir()+"/relay.db")
			cfg.Faults.StreamGoroutine = tc.goroutineMode
			cfg.KeepaliveInterval = 20 * time.Millisecond
			r := startRelay(t, cfg)
			alice, _, _ := people("http://127.0.0.1:9/mcp")
			r.DB.Insert(t, alice)
			r.rpc(t, alice.Token, "ping", nil)
			r.Client.CloseIdleConnections()
			before := runtime.NumGoroutine()
			addr := strings.TrimPrefix(r.URL, "http://")
			req := "GET /mcp HTTP/1.1\r\nHost: relay\r\nAccept: text/event-stream\r\nAuthorization: Bearer " + alice.Token + "\r\n\r\n"
			if kind == "listen" {
				req = rawListenRequest(alice.Token)
			}
			conns, err := rawStreamsOf(addr, req, n)
			require.NoError(t, err)
			relaytest.Eventually(t, "streams registered", func() bool { return r.Stats().UserStreams == n })
			per := float64(runtime.NumGoroutine()-before) / n
			if tc.minPerStream > 0 {
				assert.GreaterOrEqual(t, per, tc.minPerStream)
			}
			assert.LessOrEqual(t, per, tc.maxPerStream)

			for _, c := range conns {
				c.Close()
			}
			relaytest.Eventually(t, "gone clients' streams closed", func() bool { return r.Stats().UserStreams == 0 })
			// Their goroutines ended: a leak would be one or more per
			// stream (n); a few the process started meanwhile for its
			// own reasons (a database pool's cleaner) are not the
			// streams'. On failure, the goroutines say whose they are.
			slack := n / 10
			deadline := time.Now().Add(relaytest.WaitTimeout)
			for runtime.NumGoroutine() > before+slack && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if now := runtime.NumGoroutine(); now > before+slack {
				var dump strings.Builder
				_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
				t.Fatalf("%d goroutines %v after %d streams closed, %d before them (a leak of theirs is at least one a stream):\n%s",
					now, relaytest.WaitTimeout, n, before, dump.String())
			}
		})
	}
}
