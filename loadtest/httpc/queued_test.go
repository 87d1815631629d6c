package httpc_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// A pool too small for the load queues requests inside the generator: the
// wait is reported as Response.Queued and the run marks the step invalid,
// naming the pool — where it once passed as the target's latency. With a
// pool that fits, the same load is a valid pass.
func TestPoolTooSmallMakesTheStepInvalid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		conns   int
		verdict result.Verdict
	}{
		// 200/s × 50 ms = 10 in flight through 2 connections: requests queue.
		{2, result.Invalid},
		// 64 connections: nothing waits.
		{64, result.Pass},
	} {
		c, err := httpc.New(httpc.Options{MaxConnsPerHost: tc.conns})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		req, err := c.Prepare("GET", srv.URL, nil, nil)
		require.NoError(t, err)
		res, err := loadtest.Run(t.Context(), loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: c.Func(req)}}},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 200, Hold: 2 * time.Second}}},
			Checks:   []loadtest.Check{loadtest.LatencyBelow("get", 95, 5*time.Second)},
			Drain:    10 * time.Second,
		})
		require.NoError(t, err)
		s := res.Steps[0]
		assert.Equal(t, tc.verdict, s.Verdict, "conns %d: %+v", tc.conns, s.Self)
		if tc.verdict == result.Invalid {
			assert.Greater(t, s.Self.QueuedP99, 100*time.Millisecond)
			require.NotEmpty(t, s.Self.Reasons)
			assert.Contains(t, s.Self.Reasons[0], "raise httpc.Options.MaxConnsPerHost")
			assert.ErrorIs(t, res.Err(), loadtest.ErrInvalid)
			assert.NotErrorIs(t, res.Err(), loadtest.ErrBreach, "the target is not blamed")
		} else {
			assert.Less(t, s.Self.QueuedP99, 10*time.Millisecond)
		}
	}
	c, err := httpc.New(httpc.Options{MaxConnsPerHost: 7})
	require.NoError(t, err)
	n, what := c.Limit()
	assert.Equal(t, 7, n)
	assert.Contains(t, what, "MaxConnsPerHost")
}
