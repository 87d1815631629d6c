package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/fixtures/localpg"
	"github.com/headroom-dev/headroom/mockupstream"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// relayBinary builds the relay once per test binary, statically
// (CGO_ENABLED=0), and returns its path.
func relayBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "relay-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "relay")
		cmd := exec.Command("go", "build", "-o", binPath, ".")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// proc is a relay process under test.
type proc struct {
	cmd    *exec.Cmd
	URL    string
	mu     sync.Mutex
	lines  []map[string]any // stderr's JSON log lines
	raw    strings.Builder  // all of stderr
	exited chan struct{}
	code   int
}

// startProc starts the relay binary with env (added to this process's)
// and waits for its "listening" line. It is killed in t.Cleanup if still
// running.
func startProc(t testing.TB, env ...string) *proc {
	t.Helper()
	p := &proc{exited: make(chan struct{})}
	p.cmd = exec.Command(relayBinary(t))
	p.cmd.Env = append(os.Environ(), append([]string{"RELAY_ADDR=127.0.0.1:0"}, env...)...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			var m map[string]any
			json.Unmarshal([]byte(line), &m)
			p.mu.Lock()
			p.raw.WriteString(line + "\n")
			if m != nil {
				p.lines = append(p.lines, m)
				if m["msg"] == "relay: listening" {
					listening <- m["addr"].(string)
				}
			}
			p.mu.Unlock()
		}
		err := p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		_ = err
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	select {
	case addr := <-listening:
		p.URL = "http://" + addr
	case <-p.exited:
		t.Fatalf("relay exited at start (code %d):\n%s", p.code, p.stderr())
	case <-time.After(relaytest.WaitTimeout):
		t.Fatalf("relay did not listen within %s:\n%s", relaytest.WaitTimeout, p.stderr())
	}
	return p
}

func (p *proc) stderr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.raw.String() }

// logLine returns the first log line with msg, waiting for it.
func (p *proc) logLine(t testing.TB, msg string) map[string]any {
	t.Helper()
	var found map[string]any
	relaytest.Eventually(t, "log line "+msg, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, l := range p.lines {
			if l["msg"] == msg {
				found = l
				return true
			}
		}
		return false
	})
	return found
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-p.exited:
		return p.code
	case <-time.After(relaytest.WaitTimeout):
		t.Fatalf("relay did not exit within %s:\n%s", relaytest.WaitTimeout, p.stderr())
		return -1
	}
}

// TestDrain starts the binary, holds a stream and a slow call, sends
// SIGTERM, and checks the drain: the call finishes, its event and then
// the final shutdown event reach the stream, the duration is logged, and
// the process exits 0.
func TestDrain(t *testing.T) {
	for _, mode := range []string{"hijack", "stream-goroutine"} {
		t.Run("streams="+mode, func(t *testing.T) {
			fault := ""
			if mode == "stream-goroutine" {
				fault = mode // streams held by net/http: the drain must end them too
			}
			testDrain(t, fault)
		})
	}
}

func testDrain(t *testing.T, fault string) {
	b := relaytest.Quick()
	b.Call = mockupstream.Latency{Median: mockupstream.Duration(3 * time.Second)}
	up := relaytest.Upstream(t, b)
	db := filepath.Join(t.TempDir(), "relay.db")
	p := startProc(t, "RELAY_SQLITE_PATH="+db, "RELAY_DRAIN_TIMEOUT=30s", "RELAY_FAULT="+fault)
	h := relaytest.DB(t, db)
	alice := relaytest.User{ID: 1, WorkspaceID: 1, Token: "alice", Connectors: []relaytest.Connector{{ID: 1, Name: "gh", URL: relaytest.MCPURL(up)}}}
	h.Insert(t, alice)
	client := &http.Client{Transport: &http.Transport{}}
	stream := relaytest.OpenStream(t, client, p.URL+"/mcp", alice.Token)

	reply := make(chan relaytest.Reply, 1)
	go func() {
		// RPC fails the test and ends this goroutine when the call gets no
		// answer: the closed channel then gives a zero Reply, not a hang.
		defer close(reply)
		reply <- relaytest.RPC(t, client, p.URL+"/mcp", alice.Token, "tools/call", map[string]any{"name": "gh__tool_01"})
	}()
	relaytest.Eventually(t, "call at the upstream", func() bool { return up.Server.Stats().InFlight == 1 })
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))

	draining := p.logLine(t, "relay: draining")
	assert.EqualValues(t, 1, draining["inflight"], "the call was in flight when the drain began")
	rep := <-reply
	require.Equal(t, http.StatusOK, rep.Status, "%s", rep.Body)
	_, isErr := rep.ToolResult(t)
	assert.False(t, isErr, "the in-flight call finished normally")

	ev, ok := stream.Next(t)
	require.True(t, ok)
	assert.Equal(t, "call", ev.Event, "the drained call's event is delivered")
	ev, ok = stream.Next(t)
	require.True(t, ok)
	assert.Equal(t, "shutdown", ev.Event)
	_, ok = stream.Next(t)
	assert.False(t, ok, "then the stream ends")

	assert.Equal(t, 0, p.wait(t), "exit code\n%s", p.stderr())
	drained := p.logLine(t, "relay: drained")
	assert.Contains(t, drained, "drain_duration")
	assert.EqualValues(t, 0, drained["abandoned"])
	assert.EqualValues(t, 1, drained["streams_closed"])
}

// TestDrainTimeout checks that calls still running when
// RELAY_DRAIN_TIMEOUT passes are cancelled (a tool error for the client)
// and the process still exits 0.
func TestDrainTimeout(t *testing.T) {
	up := relaytest.Upstream(t, relaytest.Hanging())
	p, rep := termDuringCall(t, up, "RELAY_DRAIN_TIMEOUT=200ms")
	require.Equal(t, http.StatusOK, rep.Status, "%s", rep.Body)
	text, isErr := rep.ToolResult(t)
	assert.True(t, isErr)
	assert.Contains(t, text, "cancelled")
	assert.Equal(t, 0, p.wait(t), "exit code\n%s", p.stderr())
	assert.EqualValues(t, 1, p.logLine(t, "relay: drained")["abandoned"])
	relaytest.Eventually(t, "upstream request cancelled", func() bool { return up.Server.Stats().InFlight == 0 })
}

// TestBadEnvironment checks that a bad variable stops the binary at start
// with exit code 2 and a message naming it.
func TestBadEnvironment(t *testing.T) {
	tests := []struct {
		env  string
		want string // part of stderr
	}{
		{env: "RELAY_WORKERS=abc", want: "RELAY_WORKERS"},              // not a number
		{env: "RELAY_UPSTREAM_MODE=fast", want: "RELAY_UPSTREAM_MODE"}, // unknown mode
		{env: "RELAY_FAULT=call-latency", want: "RELAY_FAULT"},         // fault without its duration
		{env: "RELAY_DRAIN_TIMEOUT=10", want: "RELAY_DRAIN_TIMEOUT"},   // no unit
		{env: "RELAY_METRICS=2", want: "RELAY_METRICS"},                // not 0 or 1
		{env: "DATABASE_URL=sqlite://x", want: "DATABASE_URL"},         // not PostgreSQL
	}
	for _, tc := range tests {
		t.Run("env="+tc.env, func(t *testing.T) {
			cmd := exec.Command(relayBinary(t))
			cmd.Env = append(os.Environ(), "RELAY_ADDR=127.0.0.1:0", "RELAY_SQLITE_PATH="+filepath.Join(t.TempDir(), "r.db"), tc.env)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee, "%s", out)
			assert.Equal(t, 2, ee.ExitCode())
			assert.Contains(t, string(out), tc.want)
			assert.Contains(t, string(out), "not starting")
		})
	}
}

// TestBinaryOnPostgres runs the binary on PostgreSQL: ready, a call, its event.
func TestBinaryOnPostgres(t *testing.T) {
	pg := localpg.StartT(t, localpg.Options{})
	up := relaytest.Upstream(t, relaytest.Quick())
	p := startProc(t, "DATABASE_URL="+pg.URL, "RELAY_METRICS=1", "RELAY_FAULT=call-latency:1ms")
	resp, err := http.Get(p.URL + "/readyz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(body), `"faults":["call-latency:1ms"]`)
	assert.Contains(t, string(body), `"database":"postgres"`)

	alice := relaytest.User{ID: 1, WorkspaceID: 1, Token: "alice", Connectors: []relaytest.Connector{{ID: 1, Name: "gh", URL: relaytest.MCPURL(up)}}}
	relaytest.DB(t, pg.URL).Insert(t, alice)
	client := &http.Client{Transport: &http.Transport{}}
	feed := relaytest.OpenStream(t, client, p.URL+"/api/events", alice.Token)
	rep := relaytest.RPC(t, client, p.URL+"/mcp", alice.Token, "tools/call", map[string]any{"name": "gh__tool_02"})
	_, isErr := rep.ToolResult(t)
	assert.False(t, isErr)
	ev, ok := feed.Next(t)
	require.True(t, ok)
	assert.Equal(t, "gh__tool_02", ev.Call(t).Tool)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.wait(t), "%s", p.stderr())
}

// procCPU returns the user and system CPU time the process has used.
func procCPU(t testing.TB, pid int) (user, sys time.Duration) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	const tick = time.Second / 100 // USER_HZ is 100 on Linux
	return time.Duration(utime) * tick, time.Duration(stime) * tick
}

// BenchmarkToolsCallCPU measures the relay process's CPU per tools/call
// with an upstream that answers at once (64-byte answers), from its
// /proc/<pid>/stat. Eight clients call in a loop over keep-alive
// connections; the relay, the clients and the upstream share the machine.
//
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench ToolsCallCPU -benchtime 4000x ./examples/relay/
func BenchmarkToolsCallCPU(b *testing.B) {
	cases := []struct {
		name   string
		pg     bool
		env    []string
		method string // default tools/call
	}{
		{name: "db=sqlite/method=ping", method: "ping"}, // the HTTP + auth floor, no upstream, no database write
		{name: "db=sqlite/mode=async"},
		{name: "db=sqlite/mode=sync", env: []string{"RELAY_UPSTREAM_MODE=sync", "RELAY_WORKERS=8"}},
		{name: "db=sqlite/mode=async/metrics=1", env: []string{"RELAY_METRICS=1"}},
		{name: "db=postgres/mode=async", pg: true},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			up := relaytest.Upstream(b, relaytest.Quick())
			dsn := filepath.Join(b.TempDir(), "relay.db")
			env := append([]string{"RELAY_SQLITE_PATH=" + dsn}, c.env...)
			if c.pg {
				dsn = localpg.StartT(b, localpg.Options{}).URL
				env = append(env, "DATABASE_URL="+dsn)
			}
			p := startProc(b, env...)
			alice := relaytest.User{ID: 1, WorkspaceID: 1, Token: "alice", Connectors: []relaytest.Connector{{ID: 1, Name: "gh", URL: relaytest.MCPURL(up)}}}
			relaytest.DB(b, dsn).Insert(b, alice)
			tr := &http.Transport{MaxIdleConnsPerHost: 16}
			client := &http.Client{Transport: tr}
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"gh__tool_01","arguments":{"query":"q"}}}`)
			if c.method == "ping" {
				body = []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			}
			call := func() {
				rep := relaytest.Post(b, context.Background(), client, p.URL+"/mcp", alice.Token, body)
				if rep.Status != 200 || rep.Error != nil {
					b.Fatalf("call: %d %s", rep.Status, rep.Body)
				}
			}
			for range 200 {
				call() // warm up: caches, pools, connections
			}
			const clients = 8
			user0, sys0 := procCPU(b, p.cmd.Process.Pid)
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := range clients {
				wg.Go(func() {
					for i := w; i < b.N; i += clients {
						call()
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			user1, sys1 := procCPU(b, p.cmd.Process.Pid)
			user, sys := user1-user0, sys1-sys0
			b.ReportMetric(float64((user+sys).Microseconds())/float64(b.N), "relay-cpu-µs/call")
			b.ReportMetric(float64(user.Microseconds())/float64(b.N), "relay-user-µs/call")
			b.ReportMetric(float64(sys.Microseconds())/float64(b.N), "relay-sys-µs/call")
			p.cmd.Process.Signal(syscall.SIGTERM)
			p.wait(b)
		})
	}
}

// TestDrainPolicies checks each RELAY_DRAIN_POLICY with a call in flight
// to a 1.5 s upstream and a drain timeout of 300 ms: complete lets the
// call finish past the timeout, budgeted cancels it at the timeout,
// minimal cancels it at once. The log says which policy ran and how many
// calls were in flight; the process exits 0 every time.
func TestDrainPolicies(t *testing.T) {
	tests := []struct {
		policy    string
		cancelled bool          // the call ends as a tool error "cancelled"
		atLeast   time.Duration // the drain lasts at least this (what it waited for)
		below     time.Duration // and less than this (what it did not wait for); 0: no bound
	}{
		{"complete", false, 1200 * time.Millisecond, 0}, // the rest of the call's 1.5 s
		{"budgeted", true, 300 * time.Millisecond, 0},   // the drain timeout
		{"minimal", true, 0, 1200 * time.Millisecond},   // not the call's remaining 1.2 s or more
	}
	for _, tc := range tests {
		t.Run("policy="+tc.policy, func(t *testing.T) {
			b := relaytest.Quick()
			b.Call = mockupstream.Latency{Median: mockupstream.Duration(1500 * time.Millisecond)}
			up := relaytest.Upstream(t, b)
			p, rep := termDuringCall(t, up, "RELAY_DRAIN_TIMEOUT=300ms", "RELAY_DRAIN_POLICY="+tc.policy)
			require.Equal(t, http.StatusOK, rep.Status, "%s", rep.Body)
			text, isErr := rep.ToolResult(t)
			assert.Equal(t, tc.cancelled, isErr, "%s", text)
			if tc.cancelled {
				assert.Contains(t, text, "cancelled")
			}
			assert.Equal(t, 0, p.wait(t), "exit code\n%s", p.stderr())
			drained := p.logLine(t, "relay: drained")
			assert.Equal(t, tc.policy, drained["drain_policy"])
			assert.EqualValues(t, 1, drained["inflight"])
			abandoned := 0
			if tc.cancelled {
				abandoned = 1
			}
			assert.EqualValues(t, abandoned, drained["abandoned"])
			d := time.Duration(drained["drain_seconds"].(float64) * float64(time.Second))
			assert.GreaterOrEqual(t, d, tc.atLeast)
			if tc.below > 0 {
				assert.Less(t, d, tc.below)
			}
		})
	}
}

// termDuringCall starts the relay with env, has alice call a tool on up
// and, once the call is at the upstream, sends the relay SIGTERM; it
// returns the relay and the call's reply.
func termDuringCall(t *testing.T, up *mockupstream.Local, env ...string) (*proc, relaytest.Reply) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "relay.db")
	p := startProc(t, append([]string{"RELAY_SQLITE_PATH=" + db}, env...)...)
	alice := relaytest.User{ID: 1, WorkspaceID: 1, Token: "alice", Connectors: []relaytest.Connector{{ID: 1, Name: "gh", URL: relaytest.MCPURL(up)}}}
	relaytest.DB(t, db).Insert(t, alice)
	client := &http.Client{Transport: &http.Transport{}}
	reply := make(chan relaytest.Reply, 1)
	go func() {
		// RPC fails the test and ends this goroutine when the call gets no
		// answer: the closed channel then gives a zero Reply, not a hang.
		defer close(reply)
		reply <- relaytest.RPC(t, client, p.URL+"/mcp", alice.Token, "tools/call", map[string]any{"name": "gh__tool_01"})
	}()
	relaytest.Eventually(t, "call at the upstream", func() bool { return up.Server.Stats().InFlight == 1 })
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	return p, <-reply
}
