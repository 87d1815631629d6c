package server_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/schema"
	"github.com/headroom-dev/headroom/examples/orch/server"
	"github.com/headroom-dev/headroom/mockupstream"
)

// TestMockUpstreamVendor runs attempts against Headroom's own mock
// upstream, as the seed-002 scenario does (/echo?delay=…, bearer auth):
// a task succeeds, and a 503 from /echo?status=503 is retried and then
// fails the task.
func TestMockUpstreamVendor(t *testing.T) {
	d := fresh(t)
	up := mockupstream.StartT(t, mockupstream.Config{Addr: "127.0.0.1:0", Auth: mockupstream.AuthBearer, Token: "vendor-token"})
	_, base := d.start(t, func(c *server.Config) { c.SweepInterval = time.Hour })
	d.start(t, func(c *server.Config) {
		runner("mu", 4, up.URL+"/echo?delay=30ms&status=200&bytes=256")(c)
		c.VendorToken = "vendor-token"
	})
	d.start(t, func(c *server.Config) {
		runner("mu-bad", 4, up.URL+"/echo?delay=1ms&status=503")(c)
		c.VendorToken = "vendor-token"
		c.MaxAttempts = 2
	})
	m := createBatch(t, base, missionIn("echo", 8, 4, "hello"))[0]
	st := openStream(t, base, m.ID, 0)
	require.Equal(t, http.StatusOK, call(t, "POST", base+"/api/missions/approve", "", map[string]any{"ids": []int64{m.ID}}, nil))
	evs := st.untilEnd(t, 20*time.Second)
	last := evs[len(evs)-1].name
	// Which runner claims what is a race: all tasks may land on the good
	// one, or one on the bad one twice fails the mission.
	good := d.count(t, `SELECT count(*) FROM attempts WHERE runner = 'mu' AND outcome = 'ok'`)
	bad := d.count(t, `SELECT count(*) FROM attempts WHERE runner = 'mu-bad' AND outcome = 'error' AND error LIKE '%503%'`)
	assert.Positive(t, good, "the mock upstream answered no attempt")
	assert.Equal(t, d.count(t, `SELECT count(*) FROM attempts`), good+bad)
	if d.count(t, `SELECT count(*) FROM tasks WHERE mission_id = $1 AND status = 'failed'`, m.ID) > 0 {
		assert.Equal(t, schema.EventMissionFailed, last)
	} else {
		assert.Equal(t, schema.EventMissionDone, last)
	}
	assert.Zero(t, d.count(t, `SELECT count(*) FROM ledger WHERE runner = 'mu' AND tokens = 0`), "every echo answer books tokens")
}
