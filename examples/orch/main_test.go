package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/fixtures/localpg"
)

var pg localpg.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// build compiles the orch command into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "orch")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// proc is a running orch process.
type proc struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	logs []string
	done chan struct{}
}

func (p *proc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// start runs the binary with env (plus DATABASE_URL and ORCH_ADDR) and
// waits for /readyz.
func start(t *testing.T, bin, url string, env ...string) *proc {
	t.Helper()
	p := &proc{addr: freeAddr(t), done: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Env = append([]string{"DATABASE_URL=" + url, "ORCH_ADDR=" + p.addr}, env...)
	stderr, err := p.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs = append(p.logs, sc.Text())
			p.mu.Unlock()
		}
		p.cmd.Wait()
	}()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "readyz")
	return p
}

// stop sends SIGTERM and requires exit 0 and the drained log line.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s of SIGTERM")
	}
	assert.Equal(t, 0, p.cmd.ProcessState.ExitCode(), p.log())
	assert.Contains(t, p.log(), "orch: drained")
}

// TestCommand runs the binary: a bad environment stops it with exit 2
// naming every bad variable; a web, a worker and a runner (separate
// processes, as deployed) finish a mission against a loopback vendor;
// SIGTERM drains each to exit 0.
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := build(t)

	cmd := exec.Command(bin)
	cmd.Env = []string{"ORCH_ROLE=both", "ORCH_METRICS=maybe", "ORCH_RUNNER_SLOTS=0", "ORCH_VENDOR_URL=http://8.8.8.8/v"}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	for _, want := range []string{"DATABASE_URL is empty", `ORCH_ROLE="both"`, `ORCH_METRICS="maybe"`, `ORCH_RUNNER_SLOTS="0"`, "ORCH_VENDOR_URL"} {
		assert.Contains(t, string(out), want)
	}

	vendor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("plain answer"))
	}))
	defer vendor.Close()
	url := pg.Database(t)
	web := start(t, bin, url, "ORCH_ROLE=web", "ORCH_TOKEN=tok")
	worker := start(t, bin, url, "ORCH_ROLE=worker")
	runner := start(t, bin, url, "ORCH_ROLE=runner", "ORCH_RUNNER_SLOTS=4", "ORCH_VENDOR_URL="+vendor.URL+"/echo?delay=20ms")

	do := func(method, path string, body any, out any) int {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, "http://"+web.addr+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer tok")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		if out != nil {
			require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
		}
		return resp.StatusCode
	}
	var m struct {
		ID int64 `json:"id"`
	}
	require.Equal(t, http.StatusCreated, do("POST", "/api/missions", map[string]any{"title": "cmd", "max_parallel": 2,
		"tasks": []map[string]string{{"prompt": "a"}, {"prompt": "b"}, {"prompt": "c"}}}, &m))
	require.Equal(t, http.StatusOK, do("POST", fmt.Sprintf("/api/missions/%d/approve", m.ID), nil, nil))
	require.Eventually(t, func() bool {
		var page struct {
			Mission struct {
				Status string `json:"status"`
			} `json:"mission"`
		}
		return do("GET", fmt.Sprintf("/api/missions/%d", m.ID), nil, &page) == http.StatusOK && page.Mission.Status == "done"
	}, 20*time.Second, 50*time.Millisecond)

	resp, err := http.Get("http://" + runner.addr + "/api/missions")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	runner.stop(t)
	worker.stop(t)
	web.stop(t)
}
