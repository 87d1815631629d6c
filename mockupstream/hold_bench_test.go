package mockupstream_test

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/childserver"
	"github.com/headroom-dev/headroom/mockupstream"
)

// heldCalls is how many concurrent slow calls the hold measurements hold.
const heldCalls = 10_000

// heldCallBudget is the goal for the upstream's memory per held call.
const heldCallBudget = 16 << 10

// heldMemory is what holding n calls cost the server process.
type heldMemory struct {
	n          int
	rssPerCall float64 // Δ resident set size / n, GC garbage included
	goPerCall  float64 // Δ(heap in use + stacks + runtime-internal) after a GC / n
}

// measureHeld starts a server in this process, has a child process open n
// connections with one slow tools/call each, waits until the server holds
// all n, and measures the server process's memory growth.
func measureHeld(tb testing.TB, hold mockupstream.HoldMode, n int) heldMemory {
	tb.Helper()
	_ = childserver.RaiseFileLimit()
	b := instant()
	b.Call = mockupstream.Latency{Median: mockupstream.Duration(10 * time.Minute)} // held until the client leaves
	loc := mockupstream.StartT(tb, mockupstream.Config{Behavior: b, Hold: hold})
	require.NoError(tb, loc.Client.Health(tb.Context()))
	return measureOn(tb, loc, n)
}

// TestHoldsTenThousandCalls holds 10,000 slow calls at once in park mode
// and checks the upstream's memory per held call against the 16 KiB goal.
// Memory, not time, is asserted, so the test does not depend on the
// machine's speed; it is skipped with -short because it opens 20,000
// sockets.
func TestHoldsTenThousandCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 20,000 loopback sockets; skipped with -short")
	}
	m := measureHeld(t, mockupstream.HoldPark, heldCalls)
	t.Logf("held %d calls: %.0f B RSS and %.0f B of Go memory per held call", m.n, m.rssPerCall, m.goPerCall)
	require.LessOrEqual(t, m.rssPerCall, float64(heldCallBudget), "RSS per held call")
}

// BenchmarkHeldCall measures the server's memory per held call, holding
// 10,000 calls per iteration, in both hold modes. Run it once:
//
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench HeldCall -benchtime 1x ./mockupstream/
func BenchmarkHeldCall(b *testing.B) {
	for _, hold := range holdModes {
		b.Run("hold="+string(hold), func(b *testing.B) {
			var m heldMemory
			for range b.N {
				m = measureHeld(b, hold, heldCalls)
			}
			b.ReportMetric(m.rssPerCall, "rss-B/held")
			b.ReportMetric(m.goPerCall, "go-B/held")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// measureOn measures holding n calls on a running server.
func measureOn(tb testing.TB, loc *mockupstream.Local, n int) heldMemory {
	tb.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	rss0, go0 := rssBytes(tb), goBytes()
	lc := startLoadClient(tb, "hold", loc.Addr, n, 0)
	lc.expect(tb, "sent")
	deadline := time.Now().Add(2 * time.Minute)
	for loc.Server.Stats().InFlight < int64(n) {
		if time.Now().After(deadline) {
			tb.Fatalf("held %d of %d calls after 2 minutes", loc.Server.Stats().InFlight, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	rss1, go1 := rssBytes(tb), goBytes()
	require.NoError(tb, lc.stop())
	for loc.Server.Stats().InFlight > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return heldMemory{n: n, rssPerCall: float64(rss1-rss0) / float64(n), goPerCall: float64(go1-go0) / float64(n)}
}

// BenchmarkCompletedCall measures the server process's CPU per completed
// tools/call (user + system time from getrusage), with a child process
// sending b.N calls over 64 keep-alive connections. hold=direct answers at
// once; park and sleep hold each call 1 ms first.
//
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench CompletedCall -benchtime 100000x ./mockupstream/
func BenchmarkCompletedCall(b *testing.B) {
	for _, tc := range []struct {
		name  string
		hold  mockupstream.HoldMode
		delay mockupstream.Duration
	}{
		{"hold=direct", mockupstream.HoldPark, 0},
		{"hold=park", mockupstream.HoldPark, ms(1)},
		{"hold=sleep", mockupstream.HoldSleep, ms(1)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_ = childserver.RaiseFileLimit()
			beh := instant()
			beh.Sizes = []mockupstream.Size{{Weight: 1, Bytes: 1024}}
			beh.Call = mockupstream.Latency{Median: tc.delay}
			loc := mockupstream.StartT(b, mockupstream.Config{Behavior: beh, Hold: tc.hold})
			require.NoError(b, loc.Client.Health(b.Context()))
			u0, s0 := cpuTimes()
			b.ResetTimer()
			lc := startLoadClient(b, "loop", loc.Addr, 64, b.N)
			lc.expect(b, "done")
			b.StopTimer()
			u1, s1 := cpuTimes()
			require.NoError(b, lc.stop())
			served := loc.Server.Stats().ByOutcome["ok"]
			require.GreaterOrEqual(b, served, int64(b.N))
			b.ReportMetric(float64((u1-u0)+(s1-s0))/float64(time.Microsecond)/float64(b.N), "cpu-µs/call")
			b.ReportMetric(float64(u1-u0)/float64(time.Microsecond)/float64(b.N), "user-µs/call")
			b.ReportMetric(float64(s1-s0)/float64(time.Microsecond)/float64(b.N), "sys-µs/call")
		})
	}
}

// rssBytes returns this process's resident set size.
func rssBytes(tb testing.TB) int64 {
	tb.Helper()
	data, err := os.ReadFile("/proc/self/status")
	require.NoError(tb, err)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			kb, err := strconv.ParseInt(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(rest), []byte("kB")))), 10, 64)
			require.NoError(tb, err)
			return kb << 10
		}
	}
	tb.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// goBytes returns the Go runtime's memory in use: heap spans in use,
// goroutine stacks and runtime-internal structures (such as the poller's
// descriptors).
func goBytes() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapInuse + m.StackInuse + m.MSpanInuse + m.MCacheInuse + m.OtherSys + m.GCSys)
}

// cpuTimes returns this process's user and system CPU time.
func cpuTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}
