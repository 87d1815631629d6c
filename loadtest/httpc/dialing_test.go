package httpc_test

import (
	"context"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// slowHandshakes delays the first read of every accepted connection — the
// server's side of the TLS handshake — so that a dial takes that long.
type slowHandshakes struct {
	net.Listener
	delay time.Duration
}

func (l slowHandshakes) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &slowFirstRead{Conn: c, delay: l.delay}, nil
}

type slowFirstRead struct {
	net.Conn
	delay time.Duration
	once  sync.Once
}

func (c *slowFirstRead) Read(p []byte) (int, error) {
	c.once.Do(func() { time.Sleep(c.delay) })
	return c.Conn.Read(p)
}

// A burst of requests to a host whose connections take 20 ms to open
// (slow TLS handshakes) is served by the connections a few dials open and
// the requests free, not by a dial each: MaxDialing bounds the dials in
// progress, and a waiting request takes whichever comes first, a released
// connection or its turn to dial. Unbounded, every request of the burst
// dials (as the generator did after a pause of its own at 20,000/s, until
// its pool passed what the target accepts).
func TestABurstDialsAFewAtATime(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Listener = slowHandshakes{Listener: srv.Listener, delay: 20 * time.Millisecond}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())

	const burst = 64
	for _, tc := range []struct {
		maxDialing int
		most       int64 // dials at most
	}{
		// 4 dial; their connections serve the rest within a millisecond
		// or two, while the turns the first dials hand on open a few more.
		{4, 16},
		{burst, burst}, // unbounded in effect: a dial each
	} {
		c, err := httpc.New(httpc.Options{MaxConnsPerHost: burst, MaxDialing: tc.maxDialing, RootCAs: roots})
		require.NoError(t, err)
		req, err := c.Prepare("GET", srv.URL, nil, nil)
		require.NoError(t, err)
		var wg sync.WaitGroup
		outcomes := make([]loadtest.Outcome, burst)
		for i := range burst {
			wg.Go(func() { outcomes[i] = c.Do(context.Background(), req).Outcome })
		}
		wg.Wait()
		for i, o := range outcomes {
			require.Equal(t, loadtest.OK, o, "request %d", i)
		}
		dials := c.Stats().Dials
		t.Logf("MaxDialing %d: %d dials for a burst of %d", tc.maxDialing, dials, burst)
		if tc.maxDialing < burst {
			assert.LessOrEqual(t, dials, tc.most, "a few dials serve the burst")
		} else {
			assert.Greater(t, dials, int64(burst/2), "unbounded, most requests of the burst dial")
		}
		c.Close()
	}

	_, err := httpc.New(httpc.Options{MaxDialing: -1})
	require.ErrorContains(t, err, "MaxDialing is -1; set a positive bound or 0 for the default 16")
}
