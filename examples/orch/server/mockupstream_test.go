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
// upstream, as the seed-002 scenario does (/echo?delay=…, bearer auth): on
// one database a runner whose vendor answers 200 finishes a mission, every
// answer booking tokens; on another a runner whose vendor answers 503
// retries each task once and then fails it, and the mission. (One database
// with both runners would leave which runner claims what to a race.)
func TestMockUpstreamVendor(t *testing.T) {
	up := mockupstream.StartT(t, mockupstream.Config{Addr: "127.0.0.1:0", Auth: mockupstream.AuthBearer, Token: "vendor-token"})
	run := func(t *testing.T, vendor string, maxAttempts int) (*db, int64, string) {
		d := fresh(t)
		_, base := d.start(t, func(c *server.Config) { c.SweepInterval = time.Hour })
		d.start(t, func(c *server.Config) {
			runner("mu", 4, up.URL+vendor)(c)
			c.VendorToken, c.MaxAttempts = "vendor-token", maxAttempts
		})
		m := createBatch(t, base, missionIn("echo", 8, 4, "hello"))[0]
		st := openStream(t, base, m.ID, 0)
		require.Equal(t, http.StatusOK, call(t, "POST", base+"/api/missions/approve", "", map[string]any{"ids": []int64{m.ID}}, nil))
		evs := st.untilEnd(t, 20*time.Second)
		// Attempts of the mission's other tasks may settle after its end.
		require.Eventually(t, func() bool {
			return d.count(t, `SELECT count(*) FROM attempts WHERE outcome = 'running'`) == 0
		}, 10*time.Second, 20*time.Millisecond, "attempts still running")
		return d, m.ID, evs[len(evs)-1].name
	}
	t.Run("vendor=ok", func(t *testing.T) {
		d, id, last := run(t, "/echo?delay=30ms&status=200&bytes=256", 3)
		assert.Equal(t, schema.EventMissionDone, last)
		assert.Equal(t, int64(8), d.count(t, `SELECT count(*) FROM attempts WHERE outcome = 'ok'`))
		assert.Equal(t, int64(8), d.count(t, `SELECT count(*) FROM tasks WHERE mission_id = $1 AND status = 'done'`, id))
		assert.Zero(t, d.count(t, `SELECT count(*) FROM ledger WHERE tokens = 0`), "every echo answer books tokens")
	})
	t.Run("vendor=503", func(t *testing.T) {
		d, id, last := run(t, "/echo?delay=1ms&status=503", 2)
		assert.Equal(t, schema.EventMissionFailed, last)
		failed := d.count(t, `SELECT count(*) FROM tasks WHERE mission_id = $1 AND status = 'failed'`, id)
		assert.Positive(t, failed)
		assert.Zero(t, d.count(t, `SELECT count(*) FROM attempts WHERE outcome = 'ok'`), "a 503 is no answer")
		// Each in one statement: a runner may still claim a task the
		// failed mission left queued, and counts taken apart would see
		// its attempt in one and not the other.
		assert.Zero(t, d.count(t, `SELECT count(*) FROM attempts WHERE outcome <> 'running' AND NOT (outcome = 'error' AND error LIKE '%503%')`),
			"every attempt failed on the 503")
		assert.Zero(t, d.count(t, `SELECT count(*) FROM tasks t WHERE t.status = 'failed' AND (SELECT count(*) FROM attempts a WHERE a.task_id = t.id) <> 2`),
			"a failed task was tried ORCH_MAX_ATTEMPTS times")
	})
}
