//go:build linux && (amd64 || arm64)

package httpc_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// loopEnded is a request's end as a Loop reported it.
type loopEnded struct {
	resp loadtest.Response
	at   time.Time
	sent time.Time
}

// loopDo sends one request of each kind given, all at once (request i is
// id i), and waits for their ends, calling Wait every wait.
func loopDo(t *testing.T, l *httpc.Loop, wait time.Duration, kinds ...int) []loopEnded {
	t.Helper()
	got := make([]loopEnded, len(kinds))
	n := 0
	for i, k := range kinds {
		got[i].sent = time.Now()
		l.Send(k, i, 0)
	}
	for deadline := time.Now().Add(10 * time.Second); n < len(kinds); {
		require.True(t, time.Now().Before(deadline), "%d of %d requests ended in 10 s", n, len(kinds))
		time.Sleep(wait)
		l.Wait(time.Now().Add(20*time.Millisecond), func(id int, r loadtest.Response, at time.Time) {
			got[id].resp, got[id].at = r, at
			n++
		})
	}
	return got
}

func newLoop(t *testing.T, c *httpc.Client, urls ...string) *httpc.Loop {
	t.Helper()
	var reqs []*httpc.Request
	for _, u := range urls {
		r, err := c.Prepare("GET", u, nil, nil)
		require.NoError(t, err)
		reqs = append(reqs, r)
	}
	l, err := c.Loop(reqs...)
	require.NoError(t, err)
	return l
}

// The loop reads every kind of answer as Do does: the same outcomes and
// body bytes, and its connections serve on after each.
func TestLoop_AnswersAsDoDoes(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, httpc.Options{Timeout: 2 * time.Second})
	paths := []string{"/ok", "/status?code=302", "/status?code=404", "/status?code=503", "/reset", "/chunked", "/big?n=1000000", "/close", "/status?code=204"}
	var urls []string
	for _, p := range paths {
		urls = append(urls, srv.URL+p)
	}
	l := newLoop(t, c, urls...)
	for i, p := range paths {
		t.Run("path="+p, func(t *testing.T) {
			req, err := c.Prepare("GET", urls[i], nil, nil)
			require.NoError(t, err)
			want := c.Do(t.Context(), req)
			got := loopDo(t, l, 0, i, 0)
			assert.Equal(t, want.Outcome, got[0].resp.Outcome, "loop: %v; Do: %v", got[0].resp.Err, want.Err)
			assert.Equal(t, want.Bytes, got[0].resp.Bytes)
			assert.Equal(t, loadtest.OK, got[1].resp.Outcome, "the loop serves on: %v", got[1].resp.Err)
		})
	}
	// All at once, on as many connections.
	all := make([]int, len(paths))
	for i := range all {
		all[i] = i
	}
	for i, e := range loopDo(t, l, 0, all...) {
		assert.NotEqual(t, loadtest.Timeout, e.resp.Outcome, "%s: %v", paths[i], e.resp.Err)
	}
}

// A request's expectations judge its answers on the loop too.
func TestLoop_Expect(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, httpc.Options{})
	r, err := c.Prepare("GET", srv.URL+"/ok", nil, nil)
	require.NoError(t, err)
	l, err := c.Loop(r.WithExpect(httpc.Expect{MinBytes: 10}), r.WithExpect(httpc.Expect{Status: []int{200}}))
	require.NoError(t, err)
	got := loopDo(t, l, 0, 0, 1)
	assert.Equal(t, loadtest.AppError, got[0].resp.Outcome, "2 bytes where 10 are expected")
	assert.ErrorContains(t, got[0].resp.Err, "expected at least 10")
	assert.Equal(t, loadtest.OK, got[1].resp.Outcome)
}

// A request the server holds past the timeout ends as a Timeout, its
// connection closed; one waiting for a connection times out too, its wait
// counted as queued.
func TestLoop_Timeout(t *testing.T) {
	srv := newServer(t)
	c := newClient(t, httpc.Options{Timeout: 200 * time.Millisecond, MaxConnsPerHost: 1})
	l := newLoop(t, c, srv.URL+"/slow", srv.URL+"/ok")
	start := time.Now()
	l.Send(0, 0, 0)                   // holds the one connection for the client's 200 ms
	l.Send(1, 1, 50*time.Millisecond) // waits for it, 50 ms at most
	got := map[int]loadtest.Response{}
	for len(got) < 2 && time.Since(start) < 5*time.Second {
		l.Wait(time.Now().Add(10*time.Millisecond), func(id int, r loadtest.Response, at time.Time) { got[id] = r })
	}
	assert.Equal(t, loadtest.Timeout, got[0].Outcome, "%v", got[0].Err)
	assert.Equal(t, loadtest.Timeout, got[1].Outcome, "waited for the one connection: %v", got[1].Err)
	assert.InDelta(t, 50, float64(got[1].Queued)/1e6, 20, "its wait for a connection is its queueing")
	assert.Less(t, time.Since(start), time.Second)
	assert.Equal(t, loadtest.OK, loopDo(t, l, 0, 1)[0].resp.Outcome, "a new connection serves after the timeout")
}

// A target that refuses connections fails each request with a transport
// error, at once.
func TestLoop_Refused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := newClient(t, httpc.Options{})
	l := newLoop(t, c, "http://"+addr+"/")
	for _, e := range loopDo(t, l, 0, 0, 0, 0) {
		assert.Equal(t, loadtest.TransportError, e.resp.Outcome)
		assert.ErrorContains(t, e.resp.Err, "connection refused")
	}
}

// A reused connection that the server had closed is resent once on a new
// one for a GET — not for a POST — as the pool does.
func TestLoop_StaleConnection(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run("method="+method, func(t *testing.T) {
			url := oneShotServer(t)
			c := newClient(t, httpc.Options{})
			r, err := c.Prepare(method, url, nil, nil)
			require.NoError(t, err)
			l, err := c.Loop(r)
			require.NoError(t, err)
			require.Equal(t, loadtest.OK, loopDo(t, l, 0, 0)[0].resp.Outcome)
			time.Sleep(10 * time.Millisecond) // the server's FIN arrives, unread: the next send takes the connection
			got := loopDo(t, l, 0, 0)[0].resp
			if method == "GET" {
				assert.Equal(t, loadtest.OK, got.Outcome, "resent: %v", got.Err)
			} else {
				assert.Equal(t, loadtest.TransportError, got.Outcome, "not resent: %v", got.Err)
			}
		})
	}
}

// The loop opens at most MaxConnsPerHost connections; the requests beyond
// wait for one and count their wait as queued.
func TestLoop_BoundsConnections(t *testing.T) {
	var mu sync.Mutex
	conns := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		conns[r.RemoteAddr] = true
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, httpc.Options{MaxConnsPerHost: 3})
	l := newLoop(t, c, srv.URL)
	got := loopDo(t, l, 0, make([]int, 12)...)
	var queued int
	for _, e := range got {
		assert.Equal(t, loadtest.OK, e.resp.Outcome, "%v", e.resp.Err)
		if e.resp.Queued >= 15*time.Millisecond {
			queued++
		}
	}
	mu.Lock()
	assert.LessOrEqual(t, len(conns), 3, "the server saw more connections than the bound")
	mu.Unlock()
	assert.GreaterOrEqual(t, queued, 9, "12 requests on 3 connections: 9 waited a turn")
}

// An answer's latency ends when the kernel received it, not when the loop
// read it: read 150 ms late, an answer the server gave after 20 ms
// measures 20 ms.
func TestLoop_LatencyEndsAtReceipt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, httpc.Options{})
	l := newLoop(t, c, srv.URL)
	loopDo(t, l, 0, 0) // connected
	e := loopDo(t, l, 150*time.Millisecond, 0)[0]
	require.Equal(t, loadtest.OK, e.resp.Outcome)
	lat := e.at.Sub(e.sent)
	assert.GreaterOrEqual(t, lat, 20*time.Millisecond)
	assert.Less(t, lat, 100*time.Millisecond, "the latency is the answer's, not the late read's")
}

// A loop sends what a Client sends with Func: plain HTTP/1.1. It refuses,
// saying what to do instead, what it cannot send.
func TestLoop_Refuses(t *testing.T) {
	c := newClient(t, httpc.Options{})
	_, err := c.Loop()
	assert.ErrorContains(t, err, "one request per kind")
	tlsReq, err := c.Prepare("GET", "https://127.0.0.1:1/", nil, nil)
	require.NoError(t, err)
	_, err = c.Loop(tlsReq)
	assert.ErrorContains(t, err, "Client.Func")
	other := newClient(t, httpc.Options{})
	r, err := other.Prepare("GET", "http://127.0.0.1:1/", nil, nil)
	require.NoError(t, err)
	_, err = c.Loop(r)
	assert.ErrorContains(t, err, "not prepared by this client")
	std := newClient(t, httpc.Options{NetHTTP: true})
	r, err = std.Prepare("GET", "http://127.0.0.1:1/", nil, nil)
	require.NoError(t, err)
	_, err = std.Loop(r)
	assert.ErrorContains(t, err, "net/http")
}

// A request on the loop allocates nothing once its connection is open; the
// server runs in another process so that its allocations do not count.
func TestLoop_ZeroAllocs(t *testing.T) {
	addr := startServerProcess(t)
	c := newClient(t, httpc.Options{})
	l := newLoop(t, c, "http://"+addr+"/small")
	var ended atomic.Int64
	done := func(int, loadtest.Response, time.Time) { ended.Add(1) }
	one := func() {
		n := ended.Load()
		l.Send(0, 0, 0)
		for ended.Load() == n {
			l.Wait(time.Now().Add(time.Millisecond), done)
		}
	}
	one()
	assert.Zero(t, testing.AllocsPerRun(200, one))
}

// With one processor, a loop that does not own the process sleeps in the
// runtime's poller, so that a server in the same process — a test's, a
// mock upstream — is served while it sleeps: 100 answers one after the
// other come in well under the 10 ms each that the runtime's monitor
// alone would poll the network at, were the loop to keep the processor.
func TestLoop_OneProcessorServesTheProcess(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	c := newClient(t, httpc.Options{})
	l := newLoop(t, c, srv.URL)
	loopDo(t, l, 0, 0) // connected, the kernel's stamps seen
	var ended int
	done := func(int, loadtest.Response, time.Time) { ended++ }
	start := time.Now()
	for i := range 100 {
		l.Send(0, 0, 0)
		for ended == i && time.Since(start) < 10*time.Second {
			l.Wait(time.Now().Add(time.Millisecond), done)
		}
		if ended == i {
			break
		}
	}
	took := time.Since(start)
	t.Logf("100 answers in %v", took)
	assert.Less(t, took, 600*time.Millisecond)
}
