package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/examples/relay/server"
)

// The stream holder: this test binary, started again with holderEnv set,
// holds streams open from its own process, so that the relay's memory is
// measured without the client's.
const (
	holderEnv    = "RELAY_TEST_HOLDER"   // host:port of the relay
	holderN      = "RELAY_TEST_HOLDER_N" // streams to hold
	holderToken  = "RELAY_TEST_HOLDER_TOKEN"
	holderListen = "RELAY_TEST_HOLDER_LISTEN" // "1": subscriptions/listen streams, not GET /mcp
)

// holdStreamsMain opens the streams with raw sockets (no goroutine each),
// prints "held N", and holds them until its standard input closes.
func holdStreamsMain() int {
	addr := os.Getenv(holderEnv)
	n, _ := strconv.Atoi(os.Getenv(holderN))
	token := os.Getenv(holderToken)
	var conns []net.Conn
	var err error
	if os.Getenv(holderListen) == "1" {
		conns, err = rawStreamsOf(addr, rawListenRequest(token), n)
	} else {
		conns, err = rawStreams(addr, token, n)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "holder:", err)
		return 1
	}
	fmt.Printf("held %d\n", len(conns))
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	return 0
}

// rawStreams opens n GET /mcp streams on raw TCP connections and reads each
// up to its first comment.
func rawStreams(addr, token string, n int) ([]net.Conn, error) {
	return rawStreamsOf(addr, "GET /mcp HTTP/1.1\r\nHost: relay\r\nAccept: text/event-stream\r\nAuthorization: Bearer "+token+"\r\n\r\n", n)
}

// rawListenRequest is a subscriptions/listen request (the stateless era's
// stream) as token.
func rawListenRequest(token string) string {
	body := string(listenBody("1"))
	return "POST /mcp HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer " + token +
		"\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// rawStreamsOf sends req on n raw TCP connections and reads each answer up
// to the ": connected" comment.
func rawStreamsOf(addr, req string, n int) ([]net.Conn, error) {
	conns := make([]net.Conn, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 16 {
		wg.Go(func() {
			buf := make([]byte, 1024)
			for i := range work {
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					errs[i] = err
					continue
				}
				conns[i] = c
				c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.WriteString(c, req); err != nil {
					errs[i] = err
					continue
				}
				var got []byte
				for !bytes.Contains(got, []byte(": connected")) {
					m, err := c.Read(buf)
					if err != nil {
						errs[i] = fmt.Errorf("stream %d: %w after %q", i, err, got)
						break
					}
					got = append(got, buf[:m]...)
				}
				if !bytes.HasPrefix(got, []byte("HTTP/1.1 200 ")) {
					errs[i] = fmt.Errorf("stream %d: answer %q", i, got)
				}
				c.SetDeadline(time.Time{})
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, c := range conns {
				if c != nil {
					c.Close()
				}
			}
			return nil, err
		}
	}
	return conns, nil
}

// goMemory returns the Go heap and stacks in use after a collection that
// also returns freed memory to the OS (so RSS is comparable), in bytes.
func goMemory() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// rss returns this process's resident set in bytes.
func rss(t testing.TB) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// holdFromSubprocess starts the holder for n streams (subscriptions/listen
// streams when listen) on the relay at addr and returns once they are
// open; the holder ends in t.Cleanup.
func holdFromSubprocess(t testing.TB, addr, token string, n int, listen bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holderEnv+"="+addr, holderN+"="+strconv.Itoa(n), holderToken+"="+token)
	if listen {
		cmd.Env = append(cmd.Env, holderListen+"=1")
	}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "holder output")
	require.Equal(t, fmt.Sprintf("held %d\n", n), line)
}

// BenchmarkHeldStreams measures the relay's memory per idle held stream:
// Go heap plus stacks (after GC) and RSS, before and after another process
// opens the streams. mode=hijack is the relay's way; mode=goroutine is the
// plain net/http way (the stream-goroutine fault), for comparison.
// kind=listen holds subscriptions/listen streams (the stateless era's)
// instead of GET /mcp ones.
//
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench HeldStreams -benchtime 1x ./examples/relay/server/
func BenchmarkHeldStreams(b *testing.B) {
	for _, n := range []int{1000, 5000} {
		for _, mode := range []string{"hijack", "goroutine"} {
			for _, kind := range []string{"get", "listen"} {
				b.Run(fmt.Sprintf("streams=%d/mode=%s/kind=%s", n, mode, kind), func(b *testing.B) { benchHeldStreams(b, n, mode, kind == "listen") })
			}
		}
	}
}

func benchHeldStreams(b *testing.B, n int, mode string, listen bool) {
	cfg := testConfig(b, b.TempDir()+"/relay.db")
	cfg.Faults.StreamGoroutine = mode == "goroutine"
	cfg.KeepaliveInterval = time.Hour // idle means idle
	r := startRelay(b, cfg)
	alice, _, _ := people("http://127.0.0.1:9/mcp")
	r.DB.Insert(b, alice)
	// Warm up: one stream, so the first stream's one-off costs
	// (auth cache, pools) are not counted.
	r.stream(b, "/mcp", alice.Token).Close()
	relaytest.Eventually(b, "warm-up stream gone", func() bool { return r.Stats().UserStreams == 0 })
	addr := strings.TrimPrefix(r.URL, "http://")
	var perGo, perRSS, perG float64
	for range b.N {
		g0, m0, rss0 := runtime.NumGoroutine(), goMemory(), rss(b)
		b.StartTimer()
		holdFromSubprocess(b, addr, alice.Token, n, listen)
		relaytest.Eventually(b, "streams registered", func() bool { return r.Stats().UserStreams == int64(n) })
		b.StopTimer()
		m1, rss1, g1 := goMemory(), rss(b), runtime.NumGoroutine()
		perGo = float64(int64(m1)-int64(m0)) / float64(n) / 1024
		perRSS = float64(int64(rss1)-int64(rss0)) / float64(n) / 1024
		perG = float64(g1-g0) / float64(n)
	}
	b.ReportMetric(perGo, "KiB-heap+stack/stream")
	b.ReportMetric(perRSS, "KiB-RSS/stream")
	b.ReportMetric(perG, "goroutines/stream")
	b.ReportMetric(0, "ns/op")
	_ = server.Stats{}
}
