package httpc_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// serverEnv makes the test binary run as the benchmark's target server: a
// tiny keep-alive HTTP server in another process, so that getrusage in the
// benchmark process measures the generator alone.
const serverEnv = "HEADROOM_HTTPC_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		runServer()
		return
	}
	os.Exit(m.Run())
}

// runServer serves GET /small (a 13-byte body) on a loopback port, prints
// the address on stdout and exits when stdin closes (the parent is gone).
func runServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	body := []byte("hello, world\n")
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(body)
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Println(ln.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent exits
	os.Exit(0)
}

// startServerProcess re-executes the test binary as the target server and
// returns its address; the process is killed by PID at cleanup.
func startServerProcess(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1")
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
		tb.Fatalf("server process: %v", err)
	}
	return strings.TrimSpace(line)
}

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }
