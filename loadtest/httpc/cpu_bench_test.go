//go:build unix

package httpc_test

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// cpuTime returns the process's user and system CPU time so far.
func cpuTime(tb testing.TB) (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// waitTimeWait waits (at most 60 s) until few loopback sockets are in
// TIME_WAIT, since a previous run's closed connections can skew this one.
func waitTimeWait(tb testing.TB) {
	for range 60 {
		out, err := exec.Command("ss", "-tan", "state", "time-wait").Output()
		if err != nil || strings.Count(string(out), "\n") < 1000 {
			return
		}
		time.Sleep(time.Second)
	}
	tb.Log("TIME_WAIT sockets did not clear within 60 s")
}

// BenchmarkCPUPerRequest measures the generator's CPU per small GET over
// keep-alive connections to a server in another process: getrusage
// (user+sys) of the benchmark process divided by the requests completed,
// reported as cpu-µs/req. The clients run side by side in one run:
//
//   - client=naive:   a plain net/http loop (http.NewRequest, Client.Do,
//     io.Copy to io.Discard) on a default Transport whose only change is
//     MaxIdleConnsPerHost = concurrency, so it keeps its connections alive;
//   - client=nethttp: httpc with Options.NetHTTP (tuned net/http Transport);
//   - client=lean:    httpc's default lean HTTP/1.1 engine.
//
// Run it under the shared lock with several passes:
//
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench CPUPerRequest -benchtime 100000x -count 3 ./loadtest/httpc/
func BenchmarkCPUPerRequest(b *testing.B) {
	addr := startServerProcess(b)
	url := "http://" + addr + "/small"
	const conc = 8 // goroutines sending at once (parallelism 4 × GOMAXPROCS 2 here)
	par := max(1, conc/runtimeProcs())

	naive := func(b *testing.B) func(context.Context) loadtest.Response {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = conc
		cl := &http.Client{Transport: tr}
		b.Cleanup(tr.CloseIdleConnections)
		return func(ctx context.Context) loadtest.Response {
			req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
			if err != nil {
				return httpc.ErrorResponse(err)
			}
			resp, err := cl.Do(req)
			if err != nil {
				return httpc.ErrorResponse(err)
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			return loadtest.Response{Outcome: loadtest.StatusOutcome(resp.StatusCode), Bytes: n}
		}
	}
	engine := func(o httpc.Options) func(b *testing.B) func(context.Context) loadtest.Response {
		return func(b *testing.B) func(context.Context) loadtest.Response {
			o.MaxConnsPerHost = conc
			c, err := httpc.New(o)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(c.Close)
			req, err := c.Prepare("GET", url, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			return c.Func(req)
		}
	}
	clients := []struct {
		name string
		make func(b *testing.B) func(context.Context) loadtest.Response
	}{
		{"naive", naive},
		{"nethttp", engine(httpc.Options{NetHTTP: true})},
		{"lean", engine(httpc.Options{})},
	}
	waitTimeWait(b)
	for _, cl := range clients {
		b.Run("client="+cl.name, func(b *testing.B) {
			send := cl.make(b)
			ctx := context.Background()
			for range 1000 { // warm up: connections, buffers
				if r := send(ctx); r.Outcome != loadtest.OK {
					b.Fatalf("warm-up request: %v %v", r.Outcome, r.Err)
				}
			}
			b.SetParallelism(par)
			b.ReportAllocs()
			u0, s0 := cpuTime(b)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if r := send(ctx); r.Outcome != loadtest.OK {
						b.Errorf("request: %v %v", r.Outcome, r.Err)
						return
					}
				}
			})
			b.StopTimer()
			u1, s1 := cpuTime(b)
			n := float64(b.N)
			b.ReportMetric(float64((u1-u0)+(s1-s0))/1e3/n, "cpu-µs/req")
			b.ReportMetric(float64(u1-u0)/1e3/n, "user-µs/req")
			b.ReportMetric(float64(s1-s0)/1e3/n, "sys-µs/req")
		})
	}
}

func runtimeProcs() int { return max(gomaxprocs(), 1) }
