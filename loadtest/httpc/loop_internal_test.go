//go:build linux && (amd64 || arm64)

package httpc

import (
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
)

// Where the kernel stamps no answer, the loop reads each when it comes:
// answers wake it (once a quantum) and their latency ends when read. With
// one processor or two, 100 answers one after the other come promptly, and
// one the server gives after 20 ms measures 20 ms.
func TestLoop_WithoutStamps(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			time.Sleep(20 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	for _, procs := range []int{1, 2} {
		t.Run("GOMAXPROCS="+string(rune('0'+procs)), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			c, err := New(Options{})
			require.NoError(t, err)
			defer c.Close()
			fast, err := c.Prepare("GET", srv.URL+"/", nil, nil)
			require.NoError(t, err)
			slow, err := c.Prepare("GET", srv.URL+"/slow", nil, nil)
			require.NoError(t, err)
			l, err := c.Loop(fast, slow)
			require.NoError(t, err)
			l.sys.noStamps = true
			var ended int
			var last loadtest.Response
			var at time.Time
			done := func(_ int, r loadtest.Response, a time.Time) { ended, last, at = ended+1, r, a }
			start := time.Now()
			for i := range 100 {
				l.Send(0, 0, 0)
				for ended == i && time.Since(start) < 5*time.Second {
					l.Wait(time.Now().Add(time.Millisecond), done)
				}
				require.Equal(t, i+1, ended, "request %d did not end", i)
				require.Equal(t, loadtest.OK, last.Outcome, "%v", last.Err)
			}
			assert.Less(t, time.Since(start), time.Second, "100 answers")
			assert.False(t, l.sys.stamps)
			sent := time.Now()
			l.Send(1, 0, 0)
			for ended == 100 && time.Since(sent) < 5*time.Second {
				l.Wait(time.Now().Add(50*time.Millisecond), done)
			}
			assert.InDelta(t, 20, float64(at.Sub(sent))/1e6, 10, "the answer woke the loop")
		})
	}
}
