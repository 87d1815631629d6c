package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/examples/desk/server"
)

// TestStreamAcrossReplicas runs two web replicas on one database: an agent
// holds its live stream on replica A, another agent of its unit writes a
// note through replica B, and the stream on A gets the change (through
// NOTIFY) naming the case and its views; agents of other units get
// nothing. Keepalives come at DESK_KEEPALIVE_INTERVAL.
func TestStreamAcrossReplicas(t *testing.T) {
	d := seeded(t)
	web := func(c *server.Config) { c.Role, c.KeepaliveInterval = server.RoleWeb, 100*time.Millisecond }
	srvA, baseA := d.start(t, web)
	_, baseB := d.start(t, web)
	units := int64(d.pop.Spec.Units)
	watcher, writer, stranger := int64(1), 1+units, int64(2)

	st := d.openStream(t, baseA, watcher)
	hello := st.next(t, "hello", 5*time.Second)
	assert.JSONEq(t, fmt.Sprintf(`{"agent_id":%d,"unit_id":1}`, watcher), hello.data)
	other := d.openStream(t, baseA, stranger)
	other.next(t, "hello", 5*time.Second)
	require.Eventually(t, func() bool { return srvA.HeldStreams() == 2 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, "keepalive", st.next(t, "comment", 5*time.Second).data)

	var id int64
	var assignee *int64
	before := time.Now()
	require.NoError(t, d.pool.QueryRow(context.Background(), `SELECT id, assignee_id FROM cases WHERE unit_id = 1 AND `+schema.OpenPredicate+` ORDER BY id LIMIT 1`).Scan(&id, &assignee))
	require.Equal(t, http.StatusCreated, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/notes", baseB, id), writer, map[string]string{"body": "from replica B"}, nil))

	ev := st.next(t, "change", 5*time.Second)
	var ch struct {
		UnitID     int64    `json:"unit_id"`
		CaseID     int64    `json:"case_id"`
		Kind       string   `json:"kind"`
		AssigneeID *int64   `json:"assignee_id"`
		Views      []string `json:"views"`
		WrittenAt  string   `json:"written_at"`
	}
	require.NoError(t, json.Unmarshal([]byte(ev.data), &ch))
	// The change carries when it was written (PostgreSQL's clock, the same
	// host's), for a client's fan-out delay.
	written, err := time.Parse(time.RFC3339Nano, ch.WrittenAt)
	require.NoError(t, err, "written_at %q", ch.WrittenAt)
	assert.WithinRange(t, written, before.Add(-time.Second), time.Now())
	assert.Equal(t, int64(1), ch.UnitID)
	assert.Equal(t, id, ch.CaseID)
	assert.Equal(t, schema.KindNote, ch.Kind)
	assert.Equal(t, assignee, ch.AssigneeID)
	assert.Contains(t, ch.Views, schema.ViewOpen)
	if assignee == nil {
		assert.Contains(t, ch.Views, schema.ViewUnassigned)
	} else {
		assert.Contains(t, ch.Views, schema.ViewMine)
	}
	// The stranger's unit saw no change: only keepalives.
	deadline := time.After(300 * time.Millisecond)
	for done := false; !done; {
		select {
		case ev := <-other.events:
			assert.NotEqual(t, "change", ev.name, ev.data)
		case <-deadline:
			done = true
		}
	}
}

// TestLiveOff checks DESK_LIVE=0: the stream answers 404 and the inbox
// (the poll client's request) still works.
func TestLiveOff(t *testing.T) {
	d := seeded(t)
	_, base := d.start(t, func(c *server.Config) { c.Live = false })
	assert.Equal(t, http.StatusNotFound, d.call(t, "GET", base+"/api/stream", 1, nil, nil))
	assert.Equal(t, http.StatusOK, d.call(t, "GET", base+"/api/inbox?view=open", 1, nil, nil))
}

// TestWorkerSendsOutbox runs a web process and a worker process: a reply
// written on the web process is sent by the worker to DESK_MAIL_URL (a
// loopback stand-in, with DESK_MAIL_TOKEN) and stamped sent; the worker
// serves no API.
func TestWorkerSendsOutbox(t *testing.T) {
	d := seeded(t)
	var mu sync.Mutex
	var got []map[string]any
	mail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Authorization") != "Bearer mail-token" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if json.Unmarshal(b, &m) != nil || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer mail.Close()

	_, web := d.start(t, func(c *server.Config) { c.Role = server.RoleWeb; c.MailURL = mail.URL + "/send" })
	id := d.count(t, `SELECT id FROM cases WHERE unit_id = 1 ORDER BY id LIMIT 1`)
	require.Equal(t, http.StatusCreated, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/replies", web, id), 1, map[string]string{"body": "on its way"}, nil))
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	assert.Empty(t, got, "a web process sends no mail")
	mu.Unlock()

	_, worker := d.start(t, func(c *server.Config) {
		c.Role = server.RoleWorker
		c.MailURL, c.MailToken = mail.URL+"/send", "mail-token"
		c.OutboxInterval = time.Hour // woken by the reply's NOTIFY or its first pass
	})
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 1 }, 10*time.Second, 10*time.Millisecond)
	mu.Lock()
	assert.Equal(t, float64(id), got[0]["case_id"])
	assert.Contains(t, got[0]["subject"], fmt.Sprintf("[#%d]", id))
	assert.Equal(t, "unit001@desk.example", got[0]["from"])
	mu.Unlock()
	require.Eventually(t, func() bool {
		return d.count(t, `SELECT count(*) FROM outbox WHERE case_id = $1 AND sent_at IS NOT NULL`, id) == 1
	}, 5*time.Second, 10*time.Millisecond)

	// A second reply wakes the running worker through NOTIFY.
	require.Equal(t, http.StatusCreated, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/replies", web, id), 1, map[string]string{"body": "and again"}, nil))
	require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 2 }, 5*time.Second, 10*time.Millisecond)

	assert.Equal(t, http.StatusNotFound, d.call(t, "GET", worker+"/api/inbox", 1, nil, nil))
	assert.Equal(t, http.StatusOK, d.call(t, "GET", worker+"/readyz", 0, nil, nil))
}

// TestOutboxRetriesFailedMail checks that a failing mail stand-in leaves
// the row unsent with its error and attempts counted.
func TestOutboxRetriesFailedMail(t *testing.T) {
	d := seeded(t)
	mail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	defer mail.Close()
	_, base := d.start(t, func(c *server.Config) { c.MailURL = mail.URL; c.OutboxInterval = 50 * time.Millisecond })
	require.Equal(t, http.StatusCreated, d.call(t, "POST", base+"/api/cases/1/replies", d.count(t, `SELECT a.id FROM agents a JOIN cases c ON c.unit_id = a.unit_id WHERE c.id = 1 LIMIT 1`), map[string]string{"body": "x"}, nil))
	require.Eventually(t, func() bool {
		return d.count(t, `SELECT count(*) FROM outbox WHERE attempts >= 2 AND sent_at IS NULL AND last_error LIKE '%502%'`) == 1
	}, 5*time.Second, 10*time.Millisecond)
}
