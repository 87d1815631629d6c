package server_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/examples/desk/server"
	"github.com/headroom-dev/headroom/fixtures/localpg"
)

// startPgBouncer runs the host's pgbouncer in transaction pooling in front
// of the database at direct, and returns the URL of the same database
// through it; it is stopped at the test's end. The test is skipped when
// the host has no pgbouncer.
func startPgBouncer(t *testing.T, direct string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		if _, err := os.Stat("/usr/sbin/pgbouncer"); err != nil {
			t.Skip("no pgbouncer on this host (apt-get install pgbouncer)")
		}
		bin = "/usr/sbin/pgbouncer"
	}
	u, err := url.Parse(direct)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// Not t.TempDir: its parent is private to this (maybe root) user, and
	// pgbouncer may run as another.
	dir, err := os.MkdirTemp("", "desk-pgbouncer-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	ini := filepath.Join(dir, "pgbouncer.ini")
	pass, _ := u.User.Password() // the cluster asks for it (SCRAM)
	require.NoError(t, os.WriteFile(ini, fmt.Appendf(nil, `[databases]
* = host=%s port=%s user=%s password='%s'

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
default_pool_size = 4
max_client_conn = 200
ignore_startup_parameters = extra_float_digits,options
logfile = %s
`, u.Hostname(), u.Port(), u.User.Username(), strings.ReplaceAll(pass, "'", "''"), port, filepath.Join(dir, "pgbouncer.log")), 0o600))
	cmd := exec.Command(bin, ini)
	// PgBouncer refuses to run as root: run it as PostgreSQL's user then.
	cred, err := localpg.Credential()
	require.NoError(t, err)
	if cred != nil {
		require.NoError(t, os.Chown(dir, int(cred.Uid), int(cred.Gid)))
		require.NoError(t, os.Chown(ini, int(cred.Uid), int(cred.Gid)))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	pooled := fmt.Sprintf("postgres://%s@127.0.0.1:%d%s?sslmode=disable", u.User.Username(), port, u.Path)
	up := assert.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, pooled)
		if err != nil {
			return false
		}
		c.Close(ctx)
		return true
	}, 10*time.Second, 50*time.Millisecond)
	if !up {
		b, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
		t.Fatalf("pgbouncer did not answer; its log:\n%s", b)
	}
	return pooled
}

// TestThroughPgBouncer runs two web replicas through PgBouncer in
// transaction pooling (DESK_POOLER=1, 4 server connections for 2×20 pool
// connections) with LISTEN on a direct connection (DESK_LISTEN_URL):
// every endpoint works, and a note written on one replica reaches a
// stream on the other.
func TestThroughPgBouncer(t *testing.T) {
	d := seeded(t)
	pooled := startPgBouncer(t, d.url)
	through := func(c *server.Config) {
		c.DatabaseURL, c.ListenURL, c.Pooler = pooled, d.url, true
		c.Role = server.RoleWeb
		c.AccessCache = false // every request looks its session up, through the pooler
	}
	_, a := d.start(t, through)
	_, b := d.start(t, through)
	st := d.openStream(t, a, 1)
	st.next(t, "hello", 5*time.Second)

	id := d.count(t, `SELECT id FROM cases WHERE unit_id = 1 AND `+schema.OpenPredicate+` ORDER BY id LIMIT 1`)
	errs := make(chan error, 200)
	for i := range 40 { // concurrent requests share the 4 server connections
		go func() {
			base := []string{a, b}[i%2]
			for _, req := range []struct{ method, path string }{
				{"GET", "/api/inbox?view=open"}, {"GET", "/api/counts"}, {"GET", fmt.Sprintf("/api/cases/%d", id)},
				{"GET", "/api/search?q=printer"}, {"POST", fmt.Sprintf("/api/cases/%d/presence", id)},
			} {
				if code := d.call(t, req.method, base+req.path, 1, nil, nil); code != http.StatusOK {
					errs <- fmt.Errorf("%s %s: %d", req.method, req.path, code)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 40 {
		assert.NoError(t, <-errs)
	}
	require.Equal(t, http.StatusCreated, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/notes", b, id), 1, map[string]string{"body": "via pgbouncer"}, nil))
	require.Equal(t, http.StatusCreated, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/replies", b, id), 1, map[string]string{"body": "via pgbouncer"}, nil))
	assert.Contains(t, st.next(t, "change", 5*time.Second).data, fmt.Sprintf(`"case_id":%d`, id))
}
