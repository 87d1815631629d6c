package sse_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// feed is an SSE handler on net/http (chunked, flushed) that stamps events
// with written_at, resumes after Last-Event-ID, and ends the first
// connection after two events.
type feed struct {
	mu       sync.Mutex
	lastIDs  []string
	connects int
}

func (f *feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.connects++
	n := f.connects
	f.lastIDs = append(f.lastIDs, r.Header.Get("Last-Event-ID"))
	f.mu.Unlock()
	if r.Header.Get("Accept") != "text/event-stream" || r.Header.Get("Authorization") != "Bearer u1" {
		http.Error(w, "bad request head", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	start, _ := strconv.Atoi(r.Header.Get("Last-Event-ID"))
	for id := start + 1; id <= 4; id++ {
		_, _ = fmt.Fprintf(w, ": keepalive\n\nid: %d\nevent: call\ndata: {\"id\":%d,\"written_at\":%q}\n\n", id, id, time.Now().UTC().Format(time.RFC3339Nano))
		_ = rc.Flush()
		if n == 1 && id == 2 {
			return // drop the first connection
		}
	}
	<-r.Context().Done()
}

func TestStream_RealServer(t *testing.T) {
	for _, scheme := range []string{"http", "https"} {
		t.Run("scheme="+scheme, func(t *testing.T) {
			f := &feed{}
			var srv *httptest.Server
			var dialer *httpc.Dialer
			if scheme == "https" {
				srv = httptest.NewTLSServer(f)
				pool := x509.NewCertPool()
				pool.AddCert(srv.Certificate())
				dialer = &httpc.Dialer{TLS: &tls.Config{RootCAs: pool}}
			} else {
				srv = httptest.NewServer(f)
			}
			t.Cleanup(srv.Close)
			rec := &sink{}
			g, err := sse.NewGroup(sse.Config{
				URL:        srv.URL + "/events",
				Header:     []httpc.Header{{Name: "Authorization", Value: "Bearer u1"}},
				Dialer:     dialer,
				Sink:       rec,
				MinBackoff: time.Millisecond,
				MaxBackoff: 10 * time.Millisecond,
			})
			require.NoError(t, err)
			s := g.Open(t.Context())
			s.Expect(4)
			require.Eventually(t, func() bool { return s.Stats().Events >= 4 }, 10*time.Second, time.Millisecond)
			st := g.Close()

			assert.Equal(t, int64(4), st.Events)
			assert.Equal(t, int64(0), st.Missing)
			assert.Equal(t, int64(1), st.Drops)
			assert.Equal(t, int64(1), st.Reconnects)
			f.mu.Lock()
			assert.Equal(t, []string{"", "2"}, f.lastIDs, "reconnect resumes after the last id")
			f.mu.Unlock()
			fan := rec.get("fanout")
			require.Len(t, fan, 4)
			for _, x := range fan {
				// Same host clock: never negative, and far below a minute.
				assert.GreaterOrEqual(t, x.latency, time.Duration(0))
				assert.Less(t, x.latency, time.Minute)
				assert.Equal(t, loadtest.OK, x.resp.Outcome)
			}
			assert.Len(t, rec.get(sse.KindFirstEvent), 2, "one first event per connection")
		})
	}
}

// A stream opened by a request with a body — MCP's subscriptions/listen is
// a POST — sends Method, Accept, Content-Length and Body on every
// connection, reconnects included.
func TestStream_PostWithBody(t *testing.T) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.Header.Get("Accept")+" "+r.Header.Get("Content-Type")+" "+string(b))
		n := len(got)
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "event: call\ndata: {\"n\":%d}\n\n", n)
		_ = http.NewResponseController(w).Flush()
		if n == 1 {
			return // drop the first connection: the reconnect sends the body again
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	g, err := sse.NewGroup(sse.Config{
		URL: srv.URL + "/mcp", Method: "POST", Body: body, Accept: "application/json, text/event-stream",
		Header:     []httpc.Header{{Name: "Content-Type", Value: "application/json"}},
		MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	s := g.Open(t.Context())
	require.Eventually(t, func() bool { return s.Stats().Events >= 2 }, 10*time.Second, time.Millisecond)
	g.Close()
	want := "POST application/json, text/event-stream application/json " + string(body)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{want, want}, got)
}

// A method or Accept header that would break the request line is refused
// before any stream starts.
func TestConfig_BadMethod(t *testing.T) {
	_, err := sse.NewGroup(sse.Config{URL: "http://127.0.0.1:1/", Method: "PO ST"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Method")
}
