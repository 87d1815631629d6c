package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

// build compiles the command, static as for a FROM scratch image, into a
// temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mockupstream")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Env = append(cmd.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

var listening = regexp.MustCompile(`^mockupstream listening on (127\.0\.0\.1:\d+)$`)

// command is a started mockupstream process.
type command struct {
	cmd    *exec.Cmd
	addr   string
	exited chan error
	lines  chan string // stderr lines after the listening line
}

// startCommand starts bin with exactly env (no inherited variables, as in
// a scratch container), waits for its listening line and kills it by PID in
// t.Cleanup if it is still running.
func startCommand(t *testing.T, bin string, env ...string) *command {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append([]string{"HOST=127.0.0.1", "PORT=0"}, env...)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	c := &command{cmd: cmd, exited: make(chan error, 1), lines: make(chan string, 1000)}
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			_ = cmd.Process.Kill()
			<-c.exited
		}
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		c.exited <- cmd.Wait()
	}()
	select {
	case line := <-first:
		m := listening.FindStringSubmatch(line)
		require.NotNil(t, m, "first line %q", line)
		c.addr = m[1]
	case <-time.After(30 * time.Second):
		t.Fatal("no listening line in 30 s")
	}
	return c
}

// stop sends SIGTERM and waits (at most 10 s) for the exit.
func (c *command) stop(t *testing.T) (time.Duration, error) {
	t.Helper()
	t0 := time.Now()
	require.NoError(t, c.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-c.exited:
		c.exited <- err // for the cleanup
		return time.Since(t0), err
	case <-time.After(10 * time.Second):
		t.Fatal("still running 10 s after SIGTERM")
		return 0, nil
	}
}

func TestCommand_ServesAndStopsOnSIGTERM(t *testing.T) {
	bin := build(t)
	c := startCommand(t, bin, "MODEL=calibrated", "SEED=3", "LOG_REQUESTS=1", "ADMIN_TOKEN=t0ken")
	url := "http://" + c.addr

	resp, err := http.Get(url + "/healthz")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, "ok\n", string(body))

	// The admin endpoints answer only with the token.
	_, err = (&mockupstream.Client{BaseURL: url}).Behavior(t.Context())
	assert.ErrorContains(t, err, "401")
	_, err = (&mockupstream.Client{BaseURL: url, Token: "guess"}).Behavior(t.Context())
	assert.ErrorContains(t, err, "ADMIN_TOKEN")
	client := &mockupstream.Client{BaseURL: url, Token: "t0ken"}
	b, err := client.Behavior(t.Context())
	require.NoError(t, err)
	assert.Equal(t, uint64(3), b.Seed)
	assert.Equal(t, mockupstream.Calibrated().Call, b.Call, "MODEL=calibrated")

	// A call held for a minute does not delay the exit past the grace.
	require.NoError(t, client.SetBehavior(t.Context(), mockupstream.Behavior{ToolCount: 1, Call: mockupstream.Latency{Median: mockupstream.Duration(time.Minute)}}))
	callErr := make(chan error, 1)
	go func() {
		r, err := http.Post(url+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_01"}}`))
		if err == nil {
			r.Body.Close()
		}
		callErr <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := client.Stats(t.Context())
		require.NoError(t, err)
		if s.InFlight == 1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "call not held after 10 s")
		time.Sleep(5 * time.Millisecond)
	}

	took, err := c.stop(t)
	require.NoError(t, err, "exit status 0 on SIGTERM")
	t.Logf("exited %v after SIGTERM with a call held", took)
	assert.Error(t, <-callErr, "the held call was cut off")
}

func TestCommand_InvalidEnvironmentExits(t *testing.T) {
	bin := build(t)
	for _, tc := range []struct {
		env  string
		want string // in the message
	}{
		{"CALL_LATENCY_MS=-1", "CALL_LATENCY_MS"},                 // negative latency
		{"LIST_LATENCY_MS=-250", "LIST_LATENCY_MS"},               // negative latency
		{"CALL_P95_MS=100", "CALL_P95_MS"},                        // p95 below the median (1000)
		{"TOOL_ERROR_FRACTION=1.5", "TOOL_ERROR_FRACTION"},        // fraction above 1
		{"HANG_FRACTION=-0.5", "HANG_FRACTION"},                   // fraction below 0
		{"AUTH_MODE=oauth", "AUTH_MODE"},                          // unknown auth mode
		{"TOOL_COUNT=twenty", "TOOL_COUNT"},                       // not a number
		{"BEHAVIOR={\"call\":{\"median\":\"x\"}}", "call.median"}, // bad JSON model
	} {
		t.Run("env="+strings.SplitN(tc.env, "=", 2)[0], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = []string{"HOST=127.0.0.1", "PORT=0", tc.env}
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "want a non-zero exit, got %v: %s", err, out)
			assert.Equal(t, 2, exit.ExitCode())
			assert.Contains(t, string(out), tc.want)
			assert.NotContains(t, string(out), "listening")
		})
	}
}

// Without ADMIN_TOKEN, the command's admin endpoints are closed: nobody
// changes its behaviour mid-run.
func TestCommand_AdminClosedByDefault(t *testing.T) {
	bin := build(t)
	c := startCommand(t, bin)
	url := "http://" + c.addr
	for _, path := range []string{"/admin/behavior", "/admin/stats"} {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, path)
	}
	resp, err := http.Post(url+"/admin/behavior", "application/json", strings.NewReader(`{"tool_count":1}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}
