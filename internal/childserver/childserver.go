// Package childserver runs a loopback server in a child process for tests
// and benchmarks that measure the generator's own CPU and memory: with the
// server in another process, getrusage and MemStats see the generator alone,
// and each process has its own file-descriptor budget.
//
// The child is the test binary itself, re-executed. Call Main first thing in
// TestMain with the servers the package's tests use, then Start one by name.
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

// Serve runs a server on ln until the process exits.
type Serve func(ln net.Listener)

// Body is what HTTP answers to every request.
var Body = []byte("hello, world\n")

// HTTP serves Body (13 bytes, text/plain) to every request over keep-alive
// connections with net/http.
func HTTP(ln net.Listener) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(Body)
	})}
	_ = srv.Serve(ln)
}

// Main runs the server named in the environment and exits when this process
// is a child started by Start; otherwise it returns at once.
func Main(servers map[string]Serve) {
	name, ok := os.LookupEnv(env)
	if !ok {
		return
	}
	serve := servers[name]
	if serve == nil {
		fmt.Fprintf(os.Stderr, "childserver: no server %q\n", name)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go serve(ln)
	fmt.Println(ln.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent exits
	os.Exit(0)
}

// Start re-executes the test binary as the server named name and returns its
// address ("127.0.0.1:PORT"). The child is killed by PID at cleanup and
// exits by itself when the parent dies (its stdin closes). extraEnv
// ("KEY=value") is added to the child's environment, for what the server
// needs from the parent, such as a certificate made by the test.
func Start(tb testing.TB, name string, extraEnv ...string) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), extraEnv...), env+"="+name)
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
		tb.Fatalf("childserver %s: %v", name, err)
	}
	return strings.TrimSpace(line)
}
