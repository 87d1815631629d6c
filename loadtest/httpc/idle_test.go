package httpc_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// A burst opens several connections; the trickle of requests after it is
// served by the most recently used one, so the others stay idle and close
// after IdleTimeout: the pool keeps what the load needs. With a negative
// IdleTimeout they all stay open.
func TestClient_IdleConnectionsClose(t *testing.T) {
	for _, tc := range []struct {
		idle     time.Duration
		wantOpen int
	}{
		{150 * time.Millisecond, 1},
		{-1, 6},
	} {
		t.Run("idle="+tc.idle.String(), func(t *testing.T) {
			var open atomic.Int64
			release := make(chan struct{})
			var inBurst sync.WaitGroup
			inBurst.Add(6)
			var burst atomic.Bool
			burst.Store(true)
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if burst.Load() {
					inBurst.Done()
					<-release
				}
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				switch s {
				case http.StateNew:
					open.Add(1)
				case http.StateClosed:
					open.Add(-1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			c := newClient(t, httpc.Options{MaxConnsPerHost: 8, IdleTimeout: tc.idle})
			req, err := c.Prepare("GET", srv.URL, nil, nil)
			require.NoError(t, err)

			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() { assert.Equal(t, loadtest.OK, c.Do(t.Context(), req).Outcome) })
			}
			inBurst.Wait() // six requests in flight on six connections
			burst.Store(false)
			close(release)
			wg.Wait()
			require.Equal(t, httpc.Stats{Dials: 6, Open: 6, Idle: 6}, c.Stats())

			// One request at a time for three idle timeouts.
			for end := time.Now().Add(450 * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				require.Equal(t, loadtest.OK, c.Do(t.Context(), req).Outcome)
			}
			st := c.Stats()
			assert.Equal(t, int64(6), st.Dials, "the trickle reuses a connection of the burst")
			assert.Equal(t, tc.wantOpen, st.Open)
			assert.Equal(t, tc.wantOpen, st.Idle)
			assert.Eventually(t, func() bool { return open.Load() == int64(tc.wantOpen) }, 5*time.Second, time.Millisecond,
				"the server sees the idle connections closed")
		})
	}
}

// Requests waiting for a connection of a full pool get them first come,
// first served, including the slot of a connection that closed.
func TestClient_WaitersGetReleasedAndClosedConnections(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%3 == 0 {
			w.Header().Set("Connection", "close") // every third answer closes its connection
		}
		time.Sleep(time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, httpc.Options{MaxConnsPerHost: 2})
	req, err := c.Prepare("GET", srv.URL, nil, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 10 {
				r := c.Do(t.Context(), req)
				assert.Equal(t, loadtest.OK, r.Outcome, "%v", r.Err)
			}
		})
	}
	wg.Wait()
	st := c.Stats()
	assert.LessOrEqual(t, st.Open, 2)
	assert.Equal(t, st.Open, st.Idle)
}
