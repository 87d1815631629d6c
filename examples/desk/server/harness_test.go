package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/deskseed"
	"github.com/headroom-dev/headroom/examples/desk/server"
	"github.com/headroom-dev/headroom/fixtures/localpg"
)

// One PostgreSQL cluster serves the whole test binary; each test gets a
// database of its own.
var pg localpg.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// desk is a seeded database for one test.
type desk struct {
	url  string
	pool *pgxpool.Pool
	pop  *deskseed.Population
}

// seeded returns a fresh database holding deskseed.Short.
func seeded(t testing.TB) *desk {
	t.Helper()
	url := pg.Database(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	spec := deskseed.Short
	spec.Secret = []byte("server test secret")
	pop, err := deskseed.Apply(context.Background(), pool, spec)
	require.NoError(t, err)
	return &desk{url: url, pool: pool, pop: pop}
}

// start runs a desk on d's database on a loopback port, with the changes
// of mutate, and returns its base URL; it is closed at the test's end.
func (d *desk) start(t testing.TB, mutate func(*server.Config)) (*server.Server, string) {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.DatabaseURL = d.url
	cfg.Addr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := server.New(ctx, cfg)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return srv, "http://" + l.Addr().String()
}

// call sends a request as agent (0: no token) and decodes a JSON answer
// into out (when not nil); it returns the status code.
func (d *desk) call(t *testing.T, method, url string, agent int64, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if agent != 0 {
		req.Header.Set("Authorization", "Bearer "+d.pop.Token(agent))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if out != nil && resp.StatusCode < 300 {
		require.NoError(t, json.Unmarshal(raw, out), string(raw))
	}
	return resp.StatusCode
}

func (d *desk) count(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, d.pool.QueryRow(context.Background(), q, args...).Scan(&n), q)
	return n
}

// sse is a live stream being read.
type sse struct {
	resp   *http.Response
	events chan sseEvent
}

type sseEvent struct{ name, data string }

// openStream opens agent's live stream at base.
func (d *desk) openStream(t *testing.T, base string, agent int64) *sse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/stream", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+d.pop.Token(agent))
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &sse{resp: resp, events: make(chan sseEvent, 100)}
	t.Cleanup(func() { resp.Body.Close() })
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					s.events <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ": "):
				s.events <- sseEvent{name: "comment", data: line[2:]}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return s
}

// next returns the next event named name (skipping others), failing after
// timeout.
func (s *sse) next(t *testing.T, name string, timeout time.Duration) sseEvent {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("the stream ended before an event %q", name)
			}
			if ev.name == name {
				return ev
			}
		case <-deadline:
			t.Fatalf("no event %q within %v", name, timeout)
		}
	}
}
