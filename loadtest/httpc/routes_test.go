package httpc_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// TestClient_Routes: connections aimed at the URL's address are opened to
// the addresses of its route in turn — here two listeners of one server,
// as two published ports of one container are — and the Host header stays
// the URL's. Without the route every connection goes to the URL's
// address, which nothing serves, so the test fails if Routes is ignored.
func TestClient_Routes(t *testing.T) {
	for _, engine := range []string{"lean", "net/http"} {
		t.Run("engine="+engine, func(t *testing.T) {
			var mu sync.Mutex
			conns := map[string]int{} // connections per listening address
			hosts := map[string]int{}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hosts[r.Host]++
				mu.Unlock()
				w.Header().Set("Connection", "close") // a new connection each request
				_, _ = w.Write([]byte("ok"))
			}))
			second, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
				if s == http.StateNew {
					mu.Lock()
					conns[c.LocalAddr().String()]++
					mu.Unlock()
				}
			}
			srv.Start()
			go func() { _ = srv.Config.Serve(second) }()
			t.Cleanup(srv.Close)
			first := strings.TrimPrefix(srv.URL, "http://")

			// An address nothing listens on: a closed listener's.
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			nowhere := l.Addr().String()
			require.NoError(t, l.Close())

			c, err := httpc.New(httpc.Options{NetHTTP: engine == "net/http",
				Routes: map[string][]string{nowhere: {first, second.Addr().String()}}})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			req, err := c.Prepare("GET", "http://"+nowhere+"/", nil, nil)
			require.NoError(t, err)
			for range 10 {
				r := c.Do(context.Background(), req)
				require.Equal(t, loadtest.OK, r.Outcome, "%v", r.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, map[string]int{first: 5, second.Addr().String(): 5}, conns, "connections alternate between the route's addresses")
			assert.Equal(t, map[string]int{nowhere: 10}, hosts, "the Host header is the URL's")
		})
	}
}

// TestOptions_RoutesValidated names a malformed route.
func TestOptions_RoutesValidated(t *testing.T) {
	for name, routes := range map[string]map[string][]string{
		"key without port": {"localhost": {"127.0.0.1:1"}},
		"empty":            {"127.0.0.1:1": nil},
		"bad address":      {"127.0.0.1:1": {"127.0.0.1"}},
	} {
		_, err := httpc.New(httpc.Options{Routes: routes})
		assert.ErrorContains(t, err, "Routes", name)
	}
}
