//go:build unix

package sse_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/childserver"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// held is the memory cost of holding n idle streams.
type held struct {
	n                 int
	heapKiB, stackKiB float64 // per stream, from runtime.MemStats (HeapInuse, StackInuse)
	rssKiB            float64 // per stream, from /proc/self/statm
	goroutines        float64 // per stream
}

func (h held) totalKiB() float64 { return h.heapKiB + h.stackKiB }

func rss(tb testing.TB) float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseFloat(f[1], 64)
	return pages * float64(os.Getpagesize())
}

type memPoint struct {
	heap, stack, rss float64
	goroutines       int
}

func measure(tb testing.TB) memPoint {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memPoint{float64(ms.HeapInuse), float64(ms.StackInuse), rss(tb), runtime.NumGoroutine()}
}

// sourceAddrs returns k loopback source addresses starting at 127.0.0.first,
// so that many connections do not exhaust one address's ephemeral ports.
func sourceAddrs(first, k int) []netip.Addr {
	var out []netip.Addr
	for i := range k {
		out = append(out, netip.AddrFrom4([4]byte{127, 0, 0, byte(first + i)}))
	}
	return out
}

// holdLean opens n streams with package sse and measures them once every
// stream has its first event. With expect > 0, each stream then expects
// that many events: the first is met by the event received, the rest stay
// pending with the stream's delivery timer armed, as after a user's call.
func holdLean(tb testing.TB, addr string, n, expect int) held {
	streams := make([]*sse.Stream, 0, n)
	time.Sleep(1500 * time.Millisecond) // a previous measurement's pooled workers end
	before := measure(tb)
	g, err := sse.NewGroup(sse.Config{
		URL:               "http://" + addr + "/events",
		Dialer:            &httpc.Dialer{LocalAddrs: sourceAddrs(2, 4)},
		KeepaliveInterval: time.Minute, // health deadlines armed, as in a run
		ConnectTimeout:    30 * time.Second,
		DeliveryTimeout:   10 * time.Minute, // nothing falls due while measuring
	})
	require.NoError(tb, err)
	defer g.Close()
	ctx := context.Background()
	waitFor(tb, n, func(opened int) { streams = append(streams, g.Open(ctx)) }, func() int64 { return g.Stats().Events })
	for _, s := range streams {
		s.Expect(expect)
	}
	// The workers that connected the streams (offstack's, pooled) end
	// after a second without work: measure what the held streams keep.
	time.Sleep(1500 * time.Millisecond)
	after := measure(tb)
	require.Equal(tb, int64(n), g.Stats().Connected)
	return perStream(before, after, n)
}

// holdNetHTTP opens n streams with a net/http client, one goroutine per
// stream reading the body into a 2 KiB buffer: the reference.
func holdNetHTTP(tb testing.TB, addr string, n int) held {
	before := measure(tb)
	d := &httpc.Dialer{LocalAddrs: sourceAddrs(6, 4)}
	tr := &http.Transport{
		DialContext:        func(ctx context.Context, _, a string) (net.Conn, error) { return d.DialTCP(ctx, a) },
		DisableCompression: true,
	}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var firsts atomic.Int64
	waitFor(tb, n, func(int) {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := cl.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			buf := make([]byte, 2048)
			first := true
			for {
				if _, err := resp.Body.Read(buf); err != nil {
					return
				}
				if first {
					first = false
					firsts.Add(1)
				}
			}
		})
	}, firsts.Load)
	after := measure(tb)
	return perStream(before, after, n)
}

// waitFor opens n streams in batches of 500, waiting (at most 2 minutes)
// for each batch to deliver its first event, so the listen backlog is
// never overrun.
func waitFor(tb testing.TB, n int, open func(int), ready func() int64) {
	deadline := time.Now().Add(2 * time.Minute)
	for opened := 0; opened < n; {
		batch := min(500, n-opened)
		for range batch {
			open(opened)
			opened++
		}
		for ready() < int64(opened) {
			if time.Now().After(deadline) {
				tb.Fatalf("only %d of %d streams ready after 2 minutes", ready(), opened)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func perStream(before, after memPoint, n int) held {
	k := 1024 * float64(n)
	return held{
		n:          n,
		heapKiB:    (after.heap - before.heap) / k,
		stackKiB:   (after.stack - before.stack) / k,
		rssKiB:     (after.rss - before.rss) / k,
		goroutines: float64(after.goroutines-before.goroutines) / float64(n),
	}
}

// TestHeldStreamMemory holds 1,000 streams to a server in another process,
// idle or with a pending expectation (delivery timer armed), and checks
// the generator's cost per stream stays within 16 KiB of heap plus stack.
// To compare the states, run one at a time (-run
// 'TestHeldStreamMemory/state=idle'): the second subtest reuses the stacks
// the first freed and reads low.
func TestHeldStreamMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes memory use")
	}
	require.NoError(t, childserver.RaiseFileLimit())
	addr := startServerProcess(t)
	tests := []struct {
		state  string
		expect int
	}{
		// Connected, one event received, nothing expected.
		{"idle", 0},
		// One expected event met, one pending: a user just after a call.
		{"expecting", 2},
	}
	for _, tt := range tests {
		t.Run("state="+tt.state, func(t *testing.T) {
			h := holdLean(t, addr, 1000, tt.expect)
			t.Logf("lean: %.2f KiB heap + %.2f KiB stack = %.2f KiB per stream; RSS %.1f KiB; %.2f goroutines",
				h.heapKiB, h.stackKiB, h.totalKiB(), h.rssKiB, h.goroutines)
			assert.LessOrEqual(t, h.totalKiB(), 16.0, "KiB of heap and stack per held stream")
			assert.InDelta(t, 1.0, h.goroutines, 0.05, "one goroutine per stream")
		})
	}
}

// BenchmarkHeldStreams holds HEADROOM_SSE_STREAMS (default 10,000) idle
// streams to a server in another process and reports the generator's memory
// per stream: heap+stack from runtime.MemStats (KiB/stream) and RSS
// (rss-KiB/stream), for package sse (client=lean) and for a net/http
// streaming client (client=nethttp) side by side. One iteration per run:
//
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench HeldStreams -benchtime 1x -count 3 ./loadtest/sse/
func BenchmarkHeldStreams(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("HEADROOM_SSE_STREAMS")); err == nil && v > 0 {
		n = v
	}
	require.NoError(b, childserver.RaiseFileLimit())
	for _, client := range []string{"lean", "nethttp"} {
		b.Run(fmt.Sprintf("streams=%d/client=%s", n, client), func(b *testing.B) {
			addr := startServerProcess(b)
			var h held
			for range b.N {
				if client == "lean" {
					h = holdLean(b, addr, n, 0)
				} else {
					h = holdNetHTTP(b, addr, n)
				}
			}
			b.ReportMetric(h.totalKiB(), "KiB/stream")
			b.ReportMetric(h.heapKiB, "heap-KiB/stream")
			b.ReportMetric(h.stackKiB, "stack-KiB/stream")
			b.ReportMetric(h.rssKiB, "rss-KiB/stream")
			b.ReportMetric(h.goroutines, "goroutines/stream")
		})
	}
}
