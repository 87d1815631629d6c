package main_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/deskseed"
	"github.com/headroom-dev/headroom/fixtures/localpg"
)

var pg localpg.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// build compiles the desk command into a temporary directory.
func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "desk")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))
	return bin
}

// TestCommand runs the binary: a bad environment stops it with exit 2
// naming every bad variable; with a good one it serves, and SIGTERM
// drains it to exit 0.
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := build(t)

	cmd := exec.Command(bin)
	cmd.Env = []string{"DESK_ROLE=both", "DESK_METRICS=maybe"}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	for _, want := range []string{"DATABASE_URL is empty", `DESK_ROLE="both"`, `DESK_METRICS="maybe"`} {
		assert.Contains(t, string(out), want)
	}

	url := pg.Database(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	defer pool.Close()
	spec := deskseed.Short
	spec.Secret = []byte("main test")
	pop, err := deskseed.Apply(context.Background(), pool, spec)
	require.NoError(t, err)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	cmd = exec.Command(bin)
	cmd.Env = []string{"DATABASE_URL=" + url, "DESK_ADDR=" + addr}
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	logs := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs <- sc.Text()
		}
		close(logs)
	}()
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond)
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://%s/api/inbox?view=open", addr), nil)
	req.Header.Set("Authorization", "Bearer "+pop.Token(1))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "exit 0 after the drain")
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s of SIGTERM")
	}
	var all []string
	for line := range logs {
		all = append(all, line)
	}
	assert.Contains(t, strings.Join(all, "\n"), "desk: drained")
}
