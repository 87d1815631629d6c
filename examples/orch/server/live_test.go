package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/schema"
	"github.com/headroom-dev/headroom/examples/orch/server"
)

// TestStreamAcrossWebProcesses runs the seed's split in small: two web
// processes, a worker and a runner, each its own server. A mission is
// created and approved through web B while its board's stream is held on
// web A: the worker's and the runner's events (and B's) reach A's stream,
// through NOTIFY. A second stream on A is cut after a few events and
// reopened on B with Last-Event-ID: together the two carry every event
// exactly once. After the mission is done a stream with Last-Event-ID
// replays the rest and ends; keepalives come at ORCH_KEEPALIVE_INTERVAL.
func TestStreamAcrossWebProcesses(t *testing.T) {
	d := fresh(t)
	v := newVendor(t, 150*time.Millisecond)
	web := func(c *server.Config) { c.Role, c.KeepaliveInterval = server.RoleWeb, 100*time.Millisecond }
	srvA, baseA := d.start(t, web)
	_, baseB := d.start(t, web)
	d.start(t, func(c *server.Config) { c.Role, c.SweepInterval = server.RoleWorker, time.Hour })
	d.start(t, runner("r", 4, v.srv.URL))

	m := createBatch(t, baseB, missionIn("across", 4, 2, "go"))[0]
	st := openStream(t, baseA, m.ID, 0)
	assert.Equal(t, "connected", st.next(t, "comment", 5*time.Second).data)
	cut := openStream(t, baseA, m.ID, 0)
	idle := openStream(t, baseA, createBatch(t, baseB, missionIn("idle draft", 1, 1, "p"))[0].ID, 0)
	require.Eventually(t, func() bool { return srvA.HeldStreams() == 3 }, 5*time.Second, 10*time.Millisecond)
	idle.next(t, schema.EventMissionCreated, 5*time.Second)
	assert.Equal(t, "keepalive", idle.next(t, "comment", 5*time.Second).data)
	require.Equal(t, http.StatusOK, call(t, "POST", fmt.Sprintf("%s/api/missions/%d/approve", baseB, m.ID), "", nil, nil))

	// The cut stream: read up to the first task.started (written by the
	// runner), then hang up and resume on B.
	first := readUntil(t, cut, schema.EventTaskStarted)
	cut.resp.Body.Close()
	resumed := openStream(t, baseB, m.ID, first[len(first)-1].id)
	rest := resumed.untilEnd(t, 20*time.Second)

	all := st.untilEnd(t, 20*time.Second)
	require.NotEmpty(t, all)
	assert.Equal(t, schema.EventMissionDone, all[len(all)-1].name)
	assert.Equal(t, d.count(t, `SELECT count(*) FROM events WHERE mission_id = $1`, m.ID), int64(len(all)))
	writers := map[string]bool{}
	for _, e := range all {
		writers[e.name] = true
	}
	for _, k := range []string{schema.EventMissionCreated, schema.EventMissionApproved, schema.EventTaskQueued, schema.EventTaskStarted, schema.EventTaskDone} {
		assert.True(t, writers[k], "A's stream got no %s", k)
	}
	joined := append(append([]sseEvent{}, first...), rest...)
	require.Len(t, joined, len(all), "the cut stream and its resumption carry every event once")
	for i := range all {
		assert.Equal(t, all[i].id, joined[i].id)
		assert.Equal(t, all[i].data, joined[i].data)
	}

	// After the end: Last-Event-ID replays what follows and ends.
	mid := all[len(all)-3]
	tail := openStream(t, baseA, m.ID, mid.id).untilEnd(t, 5*time.Second)
	require.Len(t, tail, 2)
	assert.Equal(t, all[len(all)-2].id, tail[0].id)
	assert.Equal(t, schema.EventMissionDone, tail[1].name)
	// ?after= does the same.
	req, _ := http.NewRequest("GET", fmt.Sprintf("%s/api/missions/%d/events?after=%d", baseB, m.ID, mid.id), nil)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body := readAll(t, resp)
	assert.True(t, strings.HasPrefix(body, ": connected\n\n"), body)
	assert.Equal(t, 2, strings.Count(body, "\nevent: "), body)
}

// readUntil reads a stream's events up to and including the first named
// name.
func readUntil(t testing.TB, s *sse, name string) []sseEvent {
	t.Helper()
	var out []sseEvent
	deadline := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			require.True(t, ok, "the stream ended before %s", name)
			if ev.name == "comment" {
				continue
			}
			out = append(out, ev)
			if ev.name == name {
				return out
			}
		case <-deadline:
			t.Fatalf("no %s within 10s", name)
		}
	}
}

func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	b := new(strings.Builder)
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestLargeEvent: an event too large to ride in its NOTIFY payload (over
// 8000 bytes) is read once by the web process and reaches the stream
// whole.
func TestLargeEvent(t *testing.T) {
	d := fresh(t)
	_, base := d.start(t, role(server.RoleWeb))
	m := createBatch(t, base, missionIn("big", 1, 1, "p"))[0]
	st := openStream(t, base, m.ID, 0)
	st.next(t, schema.EventMissionCreated, 5*time.Second)
	big := strings.Repeat("x", 20000)
	_, err := d.pool.Exec(context.Background(), `INSERT INTO events (mission_id, kind, data) VALUES ($1, 'task.message', jsonb_build_object('text', $2::text))`, m.ID, big)
	require.NoError(t, err)
	ev := st.next(t, "task.message", 5*time.Second).decode(t)
	assert.Equal(t, big, ev.Data["text"])
}
