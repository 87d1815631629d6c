package mockupstream_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/childserver"
)

// The load client runs in a child process (this test binary re-executed),
// so that the server's memory and CPU are measured alone and each process
// stays under the 20,000 file descriptor cap. Modes:
//
//	hold  open CONNS connections, send one tools/call on each, print
//	      "sent", then hold them until stdin closes.
//	loop  run CONNS keep-alive connections that send TOTAL tools/call
//	      requests in all, reading each answer; print "done" and exit.
const loadClientEnv = "MOCKUPSTREAM_LOADCLIENT"

// sourceAddrs are the loopback source addresses the client spreads its
// connections over, so TIME_WAIT left by earlier runs does not exhaust the
// ephemeral ports of one address.
var sourceAddrs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6", "127.0.0.7", "127.0.0.8", "127.0.0.9"}

func runLoadClient(mode string) int {
	_ = childserver.RaiseFileLimit()
	addr := os.Getenv("ADDR")
	conns, _ := strconv.Atoi(os.Getenv("CONNS"))
	total, _ := strconv.Atoi(os.Getenv("TOTAL"))
	body := toolCall(1, "tool_01")
	req := fmt.Appendf(nil, "POST /mcp HTTP/1.1\r\nHost: upstream\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // every loop is bounded
	defer cancel()
	switch mode {
	case "hold":
		held := make([]net.Conn, conns)
		var (
			next atomic.Int64
			wg   sync.WaitGroup
			fail atomic.Value
		)
		for w := range 16 {
			wg.Go(func() {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(sourceAddrs[w%len(sourceAddrs)])}}
				for {
					i := int(next.Add(1) - 1)
					if i >= conns || ctx.Err() != nil {
						return
					}
					c, err := d.DialContext(ctx, "tcp", addr)
					if err == nil {
						_, err = c.Write(req)
					}
					if err != nil {
						fail.Store(err)
						return
					}
					held[i] = c
				}
			})
		}
		wg.Wait()
		if err, _ := fail.Load().(error); err != nil {
			fmt.Fprintln(os.Stderr, "loadclient:", err)
			return 1
		}
		fmt.Println("sent")
		_, _ = io.Copy(io.Discard, os.Stdin) // hold until the parent closes stdin
		for _, c := range held {
			c.Close()
		}
		return 0
	case "loop":
		var (
			left atomic.Int64
			wg   sync.WaitGroup
			fail atomic.Value
		)
		left.Store(int64(total))
		for w := range conns {
			wg.Go(func() {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(sourceAddrs[w%len(sourceAddrs)])}}
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					fail.Store(err)
					return
				}
				defer c.Close()
				br := bufio.NewReader(c)
				for left.Add(-1) >= 0 && ctx.Err() == nil {
					if _, err := c.Write(req); err != nil {
						fail.Store(err)
						return
					}
					resp, err := http.ReadResponse(br, nil)
					if err != nil {
						fail.Store(err)
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		if err, _ := fail.Load().(error); err != nil {
			fmt.Fprintln(os.Stderr, "loadclient:", err)
			return 1
		}
		fmt.Println("done")
		return 0
	}
	fmt.Fprintln(os.Stderr, "loadclient: unknown mode", mode)
	return 2
}

// loadClient is a running child load client.
type loadClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startLoadClient starts the child in mode against addr; it is killed (by
// PID) in tb.Cleanup if still running.
func startLoadClient(tb testing.TB, mode, addr string, conns, total int) *loadClient {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), loadClientEnv+"="+mode, "ADDR="+addr, "CONNS="+strconv.Itoa(conns), "TOTAL="+strconv.Itoa(total))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(tb, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(tb, err)
	require.NoError(tb, cmd.Start())
	lc := &loadClient{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	tb.Cleanup(func() { lc.stop() })
	return lc
}

// expect waits (at most 2 minutes) for the child to print line.
func (lc *loadClient) expect(tb testing.TB, line string) {
	tb.Helper()
	got := make(chan string, 1)
	go func() {
		s, _ := lc.out.ReadString('\n')
		got <- s
	}()
	select {
	case s := <-got:
		require.Equal(tb, line+"\n", s, "load client")
	case <-time.After(2 * time.Minute):
		tb.Fatalf("load client: no %q in 2 minutes", line)
	}
}

// stop closes the child's stdin and waits for it, killing it after 10 s.
func (lc *loadClient) stop() error {
	if lc.cmd.ProcessState != nil {
		return nil
	}
	lc.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- lc.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		_ = lc.cmd.Process.Kill()
		return errors.Join(errors.New("load client killed after 10 s"), <-done)
	}
}
