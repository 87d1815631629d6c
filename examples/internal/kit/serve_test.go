package kit

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A server serves once; Drain lets a request in flight finish when there
// is time, and cuts it off, saying so, when there is not.
func TestHTTPServerServesOnceAndDrains(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name    string
		wait    time.Duration // the drain's budget
		cutOff  bool
		answers bool
	}{
		{"time enough", 5 * time.Second, false, true},
		{"cut off", 50 * time.Millisecond, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			h := NewHTTPServer("svc", quiet, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				select {
				case <-release:
				case <-r.Context().Done():
				}
				_, _ = w.Write([]byte("done"))
			}))
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			serveErr := make(chan error, 1)
			go func() { serveErr <- h.Serve(ln) }()

			got := make(chan error, 1)
			go func() {
				resp, err := http.Get("http://" + ln.Addr().String() + "/")
				if err == nil {
					_, err = io.ReadAll(resp.Body)
					resp.Body.Close()
				}
				got <- err
			}()
			<-started
			if !tc.cutOff {
				time.AfterFunc(100*time.Millisecond, func() { close(release) })
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.wait)
			defer cancel()
			assert.Equal(t, tc.cutOff, h.Drain(ctx))
			assert.True(t, h.Draining())
			assert.ErrorIs(t, <-serveErr, http.ErrServerClosed)
			if tc.answers {
				assert.NoError(t, <-got)
			} else {
				assert.Error(t, <-got)
				close(release)
			}
			assert.ErrorContains(t, h.Serve(ln), "svc: Serve called twice, or after Shutdown")
		})
	}
	assert.False(t, NewHTTPServer("idle", quiet, http.NotFoundHandler()).Drain(context.Background()), "nothing served, nothing cut off")
}
