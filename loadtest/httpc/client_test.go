package httpc_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// testHandler serves the paths the tests use.
func testHandler(release <-chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "status body")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/reset", func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with RST
		}
		_ = c.Close()
	})
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, r *http.Request) {
		for i := range 5 {
			_, _ = fmt.Fprintf(w, "part-%d;", i)
			http.NewResponseController(w).Flush()
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		_, _ = w.Write([]byte(strings.Repeat("x", n)))
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Method", r.Method)
		w.Header().Set("X-Session", r.Header.Get("X-Session"))
		w.Header().Set("X-Proto", r.Proto)
		_, _ = w.Write(b)
	})
	mux.HandleFunc("/items/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path+"?"+r.URL.RawQuery)
	})
	mux.HandleFunc("/close", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "bye")
	})
	return mux
}

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(testHandler(release))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv
}

func newClient(t *testing.T, o httpc.Options) *httpc.Client {
	t.Helper()
	c, err := httpc.New(o)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func do(t *testing.T, c *httpc.Client, method, url string, call *httpc.Call) loadtest.Response {
	t.Helper()
	req, err := c.Prepare(method, url, nil, nil)
	require.NoError(t, err)
	return c.Exchange(t.Context(), req, call)
}

func TestExchange_Outcomes(t *testing.T) {
	srv := newServer(t)
	for _, engine := range []string{"lean", "nethttp"} {
		c := newClient(t, httpc.Options{Timeout: 5 * time.Second, NetHTTP: engine == "nethttp"})
		tests := []struct {
			name    string
			path    string
			timeout time.Duration
			want    loadtest.Outcome
			bytes   int64
		}{
			// A 200 with a 2-byte body.
			{"ok", "/ok", 0, loadtest.OK, 2},
			// 3xx is not followed: a redirect is no answer (see Expect).
			{"redirect", "/status?code=302", 0, loadtest.HTTP3xx, 11},
			// Client errors.
			{"404", "/status?code=404", 0, loadtest.HTTP4xx, 11},
			// Server errors.
			{"503", "/status?code=503", 0, loadtest.HTTP5xx, 11},
			// The server resets the connection: no answer at all.
			{"reset", "/reset", 0, loadtest.TransportError, 0},
			// The per-request timeout hits while the server stalls.
			{"timeout", "/slow", 50 * time.Millisecond, loadtest.Timeout, 0},
			// A chunked body is decoded and counted.
			{"chunked", "/chunked", 0, loadtest.OK, 35},
			// A large body is discarded and counted.
			{"big", "/big?n=1000000", 0, loadtest.OK, 1000000},
			// Connection: close after the answer.
			{"close", "/close", 0, loadtest.OK, 3},
		}
		for _, tt := range tests {
			t.Run("engine="+engine+"/case="+tt.name, func(t *testing.T) {
				resp := do(t, c, "GET", srv.URL+tt.path, &httpc.Call{Timeout: tt.timeout})
				assert.Equal(t, tt.want, resp.Outcome, "err: %v", resp.Err)
				assert.Equal(t, tt.bytes, resp.Bytes)
				if tt.want != loadtest.OK {
					assert.Error(t, resp.Err)
				}
				// The client still works after every kind of failure.
				after := do(t, c, "GET", srv.URL+"/ok", nil)
				assert.Equal(t, loadtest.OK, after.Outcome, "err: %v", after.Err)
			})
		}
	}
}

func TestExchange_ContextDeadlineIsTimeout(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, httpc.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	req, err := c.Prepare("GET", srv.URL+"/slow", nil, nil)
	require.NoError(t, err)
	resp := c.Do(ctx, req)
	assert.Equal(t, loadtest.Timeout, resp.Outcome, "err: %v", resp.Err)

	// An expired context never sends.
	resp = c.Do(ctx, req)
	assert.Equal(t, loadtest.Timeout, resp.Outcome)
	cctx, ccancel := context.WithCancel(t.Context())
	ccancel()
	resp = c.Do(cctx, req)
	assert.Equal(t, loadtest.TransportError, resp.Outcome)
	assert.ErrorIs(t, resp.Err, context.Canceled)
}

func TestExchange_CallParts(t *testing.T) {
	srv := newServer(t)
	for _, engine := range []string{"lean", "nethttp", "h2c"} {
		t.Run("engine="+engine, func(t *testing.T) {
			c := newClient(t, httpc.Options{NetHTTP: engine == "nethttp", HTTP2: engine == "h2c"})
			target := srv
			if engine == "h2c" {
				target = httptest.NewUnstartedServer(testHandler(nil))
				target.Config.Protocols = new(http.Protocols)
				target.Config.Protocols.SetHTTP1(true)
				target.Config.Protocols.SetUnencryptedHTTP2(true)
				target.Start()
				t.Cleanup(target.Close)
			}
			req, err := c.Prepare("POST", target.URL+"/echo", []httpc.Header{{Name: "Content-Type", Value: "application/json"}}, []byte(`{"a":1}`))
			require.NoError(t, err)
			call := &httpc.Call{KeepBody: true, Capture: []string{"x-method", "X-Session", "X-Missing", "X-Proto"}}
			for i := range 3 {
				call.Header = []httpc.Header{{Name: "X-Session", Value: "s" + strconv.Itoa(i)}}
				call.Body = nil
				if i == 2 {
					call.Body = []byte(`{"b":2}`)
				}
				resp := c.Exchange(t.Context(), req, call)
				require.Equal(t, loadtest.OK, resp.Outcome, "err: %v", resp.Err)
				assert.Equal(t, 200, call.Status)
				assert.Equal(t, []string{"POST", "s" + strconv.Itoa(i), ""}, call.Captured[:3])
				want := `{"a":1}`
				if i == 2 {
					want = `{"b":2}`
				}
				assert.Equal(t, want, string(call.RespBody))
				assert.Equal(t, int64(len(want)), resp.Bytes)
				if engine == "h2c" {
					assert.Equal(t, "HTTP/2.0", call.Captured[3])
				} else {
					assert.Equal(t, "HTTP/1.1", call.Captured[3])
				}
			}
		})
	}
}

func TestExchange_MaxBodySize(t *testing.T) {
	srv := newServer(t)
	for _, engine := range []string{"lean", "nethttp"} {
		t.Run("engine="+engine, func(t *testing.T) {
			c := newClient(t, httpc.Options{MaxBodySize: 1000, NetHTTP: engine == "nethttp"})
			for _, path := range []string{"/big?n=5000", "/chunked"} {
				call := &httpc.Call{KeepBody: true}
				resp := do(t, c, "GET", srv.URL+path, call)
				if path == "/chunked" {
					assert.Equal(t, loadtest.OK, resp.Outcome)
					continue
				}
				assert.Equal(t, loadtest.ProtocolError, resp.Outcome)
				assert.Equal(t, int64(5000), resp.Bytes)
				assert.LessOrEqual(t, len(call.RespBody), 1000)
			}
			// Without KeepBody there is no limit.
			assert.Equal(t, loadtest.OK, do(t, c, "GET", srv.URL+"/big?n=5000", nil).Outcome)
		})
	}
}

func TestClient_BoundedConnections(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		time.Sleep(time.Millisecond)
	}))
	srv.Start()
	t.Cleanup(srv.Close)
	c := newClient(t, httpc.Options{MaxConnsPerHost: 3})
	req, err := c.Prepare("GET", srv.URL, nil, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	var failed sync.Map
	for g := range 20 {
		wg.Go(func() {
			for range 10 {
				if r := c.Do(t.Context(), req); r.Outcome != loadtest.OK {
					failed.Store(g, r.Err)
				}
			}
		})
	}
	wg.Wait()
	failed.Range(func(k, v any) bool { t.Errorf("goroutine %v: %v", k, v); return true })
	mu.Lock()
	assert.LessOrEqual(t, len(conns), 3, "server saw more connections than the bound")
	mu.Unlock()
	st := c.Stats()
	assert.LessOrEqual(t, st.Dials, int64(3))
	assert.Equal(t, st.Open, st.Idle, "every connection is idle after the work")
}

func TestClient_SaturatedPoolTimesOut(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, httpc.Options{MaxConnsPerHost: 1})
	slow, err := c.Prepare("GET", srv.URL+"/slow", nil, nil)
	require.NoError(t, err)
	ok, err := c.Prepare("GET", srv.URL+"/ok", nil, nil)
	require.NoError(t, err)
	done := make(chan loadtest.Response)
	go func() { done <- c.Exchange(t.Context(), slow, &httpc.Call{Timeout: time.Second}) }()
	require.Eventually(t, func() bool { return c.Stats().Open == 1 && c.Stats().Idle == 0 }, 5*time.Second, time.Millisecond)
	resp := c.Exchange(t.Context(), ok, &httpc.Call{Timeout: 20 * time.Millisecond})
	assert.Equal(t, loadtest.Timeout, resp.Outcome, "waiting for a connection past the deadline is a timeout: %v", resp.Err)
	assert.Equal(t, loadtest.Timeout, (<-done).Outcome)
	assert.Equal(t, int64(1), c.Stats().Dials)
}

// oneShotServer answers one request per connection and then closes it
// without saying so, like a server dropping an idle keep-alive connection.
func oneShotServer(t *testing.T) string {
	return rawAnswerServer(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
}

func TestClient_StaleConnectionRetry(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		retryPOST bool
		want      loadtest.Outcome
	}{
		// GET is resent on a fresh connection.
		{"get", "GET", false, loadtest.OK},
		// POST is not resent by default: the failure shows.
		{"post", "POST", false, loadtest.TransportError},
		// POST is resent when the scenario allows it.
		{"post-retry", "POST", true, loadtest.OK},
	}
	for _, tt := range tests {
		t.Run("case="+tt.name, func(t *testing.T) {
			url := oneShotServer(t)
			c := newClient(t, httpc.Options{RetryPOST: tt.retryPOST})
			req, err := c.Prepare(tt.method, url, nil, nil)
			require.NoError(t, err)
			require.Equal(t, loadtest.OK, c.Do(t.Context(), req).Outcome)
			time.Sleep(10 * time.Millisecond) // let the server's FIN arrive
			resp := c.Do(t.Context(), req)
			assert.Equal(t, tt.want, resp.Outcome, "err: %v", resp.Err)
		})
	}
}

func TestClient_TLSCustomRoot(t *testing.T) {
	srv := httptest.NewTLSServer(testHandler(nil))
	t.Cleanup(srv.Close)
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tests := []struct {
		name string
		opts httpc.Options
		want loadtest.Outcome
	}{
		// The CA as PEM bytes, as read from Caddy's root.crt.
		{"pem", httpc.Options{RootCAPEM: pemBytes}, loadtest.OK},
		// The CA as a pool.
		{"pool", httpc.Options{RootCAs: pool}, loadtest.OK},
		// Through net/http.
		{"pool-nethttp", httpc.Options{RootCAs: pool, NetHTTP: true}, loadtest.OK},
		// Unknown CA: a TLS failure is a transport error.
		{"unknown-ca", httpc.Options{}, loadtest.TransportError},
	}
	for _, tt := range tests {
		t.Run("roots="+tt.name, func(t *testing.T) {
			c := newClient(t, tt.opts)
			for range 3 { // the connection is reused
				resp := do(t, c, "GET", srv.URL+"/ok", nil)
				require.Equal(t, tt.want, resp.Outcome, "err: %v", resp.Err)
			}
			if tt.want == loadtest.OK && !tt.opts.NetHTTP {
				assert.Equal(t, int64(1), c.Stats().Dials)
			}
		})
	}
	_, err := httpc.New(httpc.Options{RootCAPEM: []byte("not a cert")})
	assert.ErrorContains(t, err, "RootCAPEM")
}

func TestClient_HTTP2(t *testing.T) {
	srv := httptest.NewUnstartedServer(testHandler(nil))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c := newClient(t, httpc.Options{HTTP2: true, RootCAs: pool})
	call := &httpc.Call{Capture: []string{"X-Proto"}}
	resp := do(t, c, "GET", srv.URL+"/echo", call)
	require.Equal(t, loadtest.OK, resp.Outcome, "err: %v", resp.Err)
	assert.Equal(t, "HTTP/2.0", call.Captured[0])
	resp = do(t, c, "GET", srv.URL+"/status?code=500", nil)
	assert.Equal(t, loadtest.HTTP5xx, resp.Outcome)
}

func TestPrepare_BadInput(t *testing.T) {
	c := newClient(t, httpc.Options{})
	tests := []struct {
		name, method, url string
		headers           []httpc.Header
		want              string
	}{
		// A method with a space.
		{"method", "GE T", "http://127.0.0.1/", nil, "method"},
		// A relative URL.
		{"relative", "GET", "/path", nil, "scheme"},
		// An unsupported scheme.
		{"scheme", "GET", "ftp://127.0.0.1/", nil, "scheme"},
		// A header the client sets itself.
		{"content-length", "GET", "http://127.0.0.1/", []httpc.Header{{Name: "content-length", Value: "3"}}, "set by the client"},
		// Header injection.
		{"crlf", "GET", "http://127.0.0.1/", []httpc.Header{{Name: "X-A", Value: "a\r\nX-B: b"}}, "line break"},
	}
	for _, tt := range tests {
		t.Run("case="+tt.name, func(t *testing.T) {
			_, err := c.Prepare(tt.method, tt.url, tt.headers, nil)
			assert.ErrorContains(t, err, tt.want)
		})
	}
	_, err := httpc.New(httpc.Options{MaxConnsPerHost: -1})
	assert.ErrorContains(t, err, "MaxConnsPerHost")
}

// TestDo_ZeroAllocs checks that a send on the lean engine allocates nothing;
// the server runs in another process so that its allocations do not count.
func TestDo_ZeroAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := newClient(t, httpc.Options{})
	req, err := c.Prepare("GET", "http://"+addr+"/small", nil, nil)
	require.NoError(t, err)
	call := &httpc.Call{Header: []httpc.Header{httpc.ForwardedFor(7)}}
	ctx := t.Context()
	require.Equal(t, loadtest.OK, c.Exchange(ctx, req, call).Outcome)
	allocs := testing.AllocsPerRun(200, func() {
		if r := c.Exchange(ctx, req, call); r.Outcome != loadtest.OK {
			t.Fatal(r.Err)
		}
	})
	assert.Zero(t, allocs, "allocations per request on the lean engine")
}
