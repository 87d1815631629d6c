package server_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
)

// TestFanoutAcrossReplicas checks that two relays on one PostgreSQL each
// deliver every event to their own watchers, whichever relay served the
// call: the events travel through LISTEN/NOTIFY.
func TestFanoutAcrossReplicas(t *testing.T) {
	dsn := pgURL(t)
	up := relaytest.Upstream(t, relaytest.Quick())
	a := startRelay(t, testConfig(t, dsn))
	b := startRelay(t, testConfig(t, dsn))
	alice, bob, _ := people(relaytest.MCPURL(up))
	a.DB.Insert(t, alice, bob)

	streams := map[string]*relaytest.Stream{
		"alice@a": a.stream(t, "/mcp", alice.Token),
		"alice@b": b.stream(t, "/mcp", alice.Token),
		"feed@a":  a.stream(t, "/api/events", bob.Token),
		"feed@b":  b.stream(t, "/api/events", bob.Token),
	}
	for i, via := range []*relay{a, b, a} {
		via.call(t, alice.Token, "github__tool_01", map[string]any{"n": i})
		var id string
		for name, s := range streams {
			ev, ok := s.Next(t)
			require.True(t, ok, name)
			c := ev.Call(t)
			assert.Equal(t, alice.ID, c.UserID, name)
			if id == "" {
				id = ev.ID
			}
			assert.Equal(t, id, ev.ID, "%s: call %d: every watcher gets the same event", name, i)
		}
	}

	// An event too large for a notification (a 7,100-byte connector name)
	// travels by id, and each replica fetches it. A third relay serves the
	// call, as a and b have alice's old connector name cached.
	long := repeat("x", 7100)
	_, err := a.DB.Exec(`UPDATE connectors SET name = $1 WHERE id = 101`, long)
	require.NoError(t, err)
	tool := long + "__tool_01"
	c := startRelay(t, testConfig(t, dsn))
	c.call(t, alice.Token, tool, nil)
	for name := range streams {
		ev, ok := streams[name].Next(t)
		require.True(t, ok, name)
		assert.Equal(t, tool, ev.Call(t).Tool, "%s: the event too large for a notification arrives whole", name)
	}
}

func repeat(s string, n int) string {
	b := make([]byte, 0, len(s)*n)
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

// TestFanoutSurvivesListenerLoss checks that when the LISTEN connection is
// killed, the relay reconnects and still delivers the events written
// meanwhile (it replays those after the last one it delivered).
func TestFanoutSurvivesListenerLoss(t *testing.T) {
	dsn := pgURL(t)
	up := relaytest.Upstream(t, relaytest.Quick())
	r := startRelay(t, testConfig(t, dsn))
	alice, _, _ := people(relaytest.MCPURL(up))
	r.DB.Insert(t, alice)
	feed := r.stream(t, "/api/events", alice.Token)
	r.call(t, alice.Token, "github__tool_01", nil)
	first, ok := feed.Next(t)
	require.True(t, ok)

	var killed int
	require.NoError(t, r.DB.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN relay_events'`).Scan(&killed))
	require.Equal(t, 1, killed, "one LISTEN connection")
	for i := range 3 {
		r.call(t, alice.Token, "github__tool_02", map[string]any{"i": i})
	}
	seen := map[string]bool{first.ID: true}
	for range 3 {
		ev, ok := feed.Next(t)
		require.True(t, ok)
		assert.False(t, seen[ev.ID], "event %s delivered twice", ev.ID)
		seen[ev.ID] = true
		assert.Equal(t, "github__tool_02", ev.Call(t).Tool)
	}
	var listeners int
	require.NoError(t, r.DB.QueryRow(`SELECT count(*) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN relay_events'`).Scan(&listeners))
	assert.Equal(t, 1, listeners, "listening again")
}
