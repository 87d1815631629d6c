package sse_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// A held stream waits for its socket to be readable and then reads; over
// TLS, what the connection has already received or decrypted is not on
// the socket any more and must be read before the stream waits again.
// These run on real sockets (plain and TLS), with a read buffer smaller
// than what arrives at once, with several TLS records per read, and with
// records trickling in a few bytes at a time; the server then goes silent
// so that an event left unread would stay unread.
func TestStream_ReadsWhatArrivedBeforeWaiting(t *testing.T) {
	const events = 20
	body := func(from int) string {
		var b strings.Builder
		for i := from; i < from+events/2; i++ {
			fmt.Fprintf(&b, "id: %d\ndata: {\"n\":%d,\"pad\":%q}\n\n", i, i, strings.Repeat("x", 40))
		}
		return b.String()
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		// Half the events in one write (one TLS record, larger than the
		// stream's buffer), half in writes of their own (a record each).
		_, _ = io.WriteString(w, body(0))
		_ = rc.Flush()
		for _, ev := range strings.SplitAfter(body(events/2), "\n\n") {
			if ev != "" {
				_, _ = io.WriteString(w, ev)
				_ = rc.Flush()
			}
		}
		<-r.Context().Done() // silent from here on
	})
	for _, tc := range []struct {
		name          string
		secure, slow  bool
		keepaliveWait time.Duration
	}{
		{name: "plain", secure: false},
		{name: "tls", secure: true},
		{name: "tls-trickle", secure: true, slow: true},
		{name: "plain-trickle", secure: false, slow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewUnstartedServer(handler)
			var dialer *httpc.Dialer
			if tc.secure {
				srv.StartTLS()
				pool := x509.NewCertPool()
				pool.AddCert(srv.Certificate())
				dialer = &httpc.Dialer{TLS: &tls.Config{RootCAs: pool}}
			} else {
				srv.Start()
				dialer = &httpc.Dialer{}
			}
			t.Cleanup(srv.Close)
			url := srv.URL
			if tc.slow {
				// Through a proxy that passes the server's bytes on three
				// at a time: records arrive in pieces.
				url = strings.Replace(url, srv.Listener.Addr().String(), trickle(t, srv.Listener.Addr().String()), 1)
			}
			g, err := sse.NewGroup(sse.Config{URL: url + "/events", Dialer: dialer, BufferSize: 256})
			require.NoError(t, err)
			s := g.Open(t.Context())
			s.Expect(events)
			require.Eventually(t, func() bool { return s.Stats().Events == events }, 10*time.Second, time.Millisecond,
				"every event arrives though the server went silent after them")
			assert.Equal(t, fmt.Sprint(events-1), s.LastEventID())
			st := g.Close()
			assert.Zero(t, st.Missing)
			assert.Zero(t, st.ProtocolErrors)
			assert.Zero(t, st.Drops)
		})
	}
}

// trickle listens on loopback and forwards each connection to addr,
// passing the server's bytes on three at a time with a pause between.
func trickle(t *testing.T, addr string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer up.Close()
				go func() {
					_, _ = io.Copy(up, c)
					_ = up.Close() // the client left: so does the server's request
				}()
				buf := make([]byte, 3)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
						time.Sleep(100 * time.Microsecond)
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// A held stream on a real socket that hears nothing for twice the
// keepalive interval is unhealthy while it waits, and healthy again when
// the next event comes; Close ends it while it waits.
func TestStream_HealthWhileWaiting(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%t", secure), func(t *testing.T) {
			next := make(chan struct{})
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				rc := http.NewResponseController(w)
				_, _ = io.WriteString(w, "data: first\n\n")
				_ = rc.Flush()
				select {
				case <-next:
				case <-r.Context().Done():
					return
				}
				_, _ = io.WriteString(w, "data: second\n\n")
				_ = rc.Flush()
				<-r.Context().Done()
			}))
			dialer := &httpc.Dialer{}
			if secure {
				srv.StartTLS()
				pool := x509.NewCertPool()
				pool.AddCert(srv.Certificate())
				dialer = &httpc.Dialer{TLS: &tls.Config{RootCAs: pool}}
			} else {
				srv.Start()
			}
			t.Cleanup(srv.Close)
			rec := &sink{}
			g, err := sse.NewGroup(sse.Config{URL: srv.URL + "/events", Dialer: dialer, KeepaliveInterval: 20 * time.Millisecond, Sink: rec})
			require.NoError(t, err)
			s := g.Open(t.Context())
			require.Eventually(t, func() bool { return s.Stats().UnhealthyNow == 1 }, 5*time.Second, time.Millisecond)
			assert.Equal(t, int64(1), s.Stats().Events)
			close(next)
			require.Eventually(t, func() bool { return s.Stats().Events == 2 }, 5*time.Second, time.Millisecond)
			assert.Zero(t, s.Stats().UnhealthyNow, "healthy again")
			assert.Zero(t, s.Stats().Drops, "silence is not a drop")
			done := make(chan sse.Stats)
			go func() { done <- g.Close() }()
			select {
			case st := <-done:
				assert.Equal(t, int64(1), st.Unhealthy)
			case <-time.After(5 * time.Second):
				t.Fatal("Close did not end a waiting stream")
			}
			assert.NotEmpty(t, rec.get(sse.KindHealth))
		})
	}
}
