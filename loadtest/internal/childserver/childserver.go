// Package childserver runs a tiny keep-alive HTTP server in a child process
// for benchmarks that measure the generator's own CPU and memory: with the
// server in another process, getrusage and MemStats in the benchmark see the
// generator alone.
//
// The child is the test binary itself, re-executed: call Main first thing in
// TestMain, then Start from a benchmark.
package childserver

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const env = "HEADROOM_CHILD_SERVER"

// Body is what the server answers to every request.
var Body = []byte("hello, world\n")

// Main serves and exits when this process is a child started by Start;
// otherwise it returns at once.
func Main() {
	if os.Getenv(env) != "1" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(Body)
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(ln.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent exits
	os.Exit(0)
}

// Start re-executes the test binary as the server and returns its address
// ("127.0.0.1:PORT"); the child is killed by PID at cleanup, and exits by
// itself when the parent dies (its stdin closes).
func Start(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("childserver: %v", err)
	}
	return strings.TrimSpace(line)
}
