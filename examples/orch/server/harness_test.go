package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/schema"
	"github.com/headroom-dev/headroom/examples/orch/server"
	"github.com/headroom-dev/headroom/fixtures/localpg"
)

// One PostgreSQL cluster serves the whole test binary; each test gets a
// database of its own.
var pg localpg.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// db is a fresh, migrated database for one test.
type db struct {
	url  string
	pool *pgxpool.Pool
}

func fresh(t testing.TB) *db {
	t.Helper()
	url := pg.Database(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	_, err = schema.Migrate(context.Background(), pool)
	require.NoError(t, err)
	return &db{url: url, pool: pool}
}

// start runs an orch process on d's database on a loopback port, with the
// changes of mutate, and returns it and its base URL; it is closed at the
// test's end.
func (d *db) start(t testing.TB, mutate func(*server.Config)) (*server.Server, string) {
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

func role(r string) func(*server.Config) { return func(c *server.Config) { c.Role = r } }

// runner returns a mutate for a runner named name with slots slots calling
// vendor.
func runner(name string, slots int, vendor string) func(*server.Config) {
	return func(c *server.Config) {
		c.Role, c.RunnerName, c.RunnerSlots, c.VendorURL = server.RoleRunner, name, slots, vendor
		c.ClaimInterval = 200 * time.Millisecond
	}
}

// call sends a request (with token when not empty) and decodes a JSON
// answer into out (when not nil); it returns the status code.
func call(t testing.TB, method, url, token string, body, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
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

func (d *db) count(t testing.TB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, d.pool.QueryRow(context.Background(), q, args...).Scan(&n), q)
	return n
}

// mission is a mission as the API answers it.
type mission struct {
	ID          int64            `json:"id"`
	Title       string           `json:"title"`
	Status      string           `json:"status"`
	MaxParallel int              `json:"max_parallel"`
	TaskCounts  map[string]int64 `json:"task_counts"`
	Tasks       []struct {
		ID       int64  `json:"id"`
		Seq      int    `json:"seq"`
		Title    string `json:"title"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	} `json:"tasks"`
}

// missionIn builds a mission of n tasks whose prompts are prompt + " #i".
func missionIn(title string, n, parallel int, prompt string) map[string]any {
	tasks := make([]map[string]string, n)
	for i := range tasks {
		tasks[i] = map[string]string{"title": "step " + strconv.Itoa(i+1), "prompt": prompt + " #" + strconv.Itoa(i+1)}
	}
	return map[string]any{"title": title, "max_parallel": parallel, "tasks": tasks}
}

// createBatch creates missions through base and returns them.
func createBatch(t testing.TB, base string, ms ...map[string]any) []mission {
	t.Helper()
	var out struct {
		Missions []mission `json:"missions"`
	}
	require.Equal(t, http.StatusCreated, call(t, "POST", base+"/api/missions/batch", "", map[string]any{"missions": ms}, &out))
	require.Len(t, out.Missions, len(ms))
	return out.Missions
}

// sse is a live stream being read.
type sse struct {
	resp   *http.Response
	events chan sseEvent
}

type sseEvent struct {
	id         int64
	name, data string
}

// event is the data of a stream event.
type event struct {
	ID        int64          `json:"id"`
	MissionID int64          `json:"mission_id"`
	TaskID    *int64         `json:"task_id"`
	Kind      string         `json:"kind"`
	WrittenAt string         `json:"written_at"`
	Data      map[string]any `json:"data"`
}

func (e sseEvent) decode(t testing.TB) event {
	t.Helper()
	var ev event
	require.NoError(t, json.Unmarshal([]byte(e.data), &ev), e.data)
	return ev
}

// openStream opens mission's event stream at base, with Last-Event-ID
// when lastID > 0.
func openStream(t testing.TB, base string, id int64, lastID int64) *sse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/api/missions/"+strconv.FormatInt(id, 10)+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Accept", "text/event-stream")
	if lastID > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	s := &sse{resp: resp, events: make(chan sseEvent, 1000)}
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
			case strings.HasPrefix(line, "id: "):
				ev.id, _ = strconv.ParseInt(line[4:], 10, 64)
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
func (s *sse) next(t testing.TB, name string, timeout time.Duration) sseEvent {
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

// untilEnd collects the stream's events (not comments) until it ends,
// failing after timeout.
func (s *sse) untilEnd(t testing.TB, timeout time.Duration) []sseEvent {
	t.Helper()
	var out []sseEvent
	deadline := time.After(timeout)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return out
			}
			if ev.name != "comment" {
				out = append(out, ev)
			}
		case <-deadline:
			t.Fatalf("the stream did not end within %v; got %d events", timeout, len(out))
		}
	}
}

// vendor is a stand-in LLM vendor: it answers each POST after delay,
// recording the calls in flight per mission (and their most), and answers
// the status fail gives (0: 200 with a usage block).
type vendor struct {
	srv   *httptest.Server
	delay time.Duration
	fail  func(prompt string, attempt int) int
	gate  chan struct{} // when not nil, each call waits for it to close (or its request to end)

	mu          sync.Mutex
	calls       int
	inflight    map[int64]int
	maxInflight map[int64]int
}

func newVendor(t testing.TB, delay time.Duration) *vendor {
	v := &vendor{delay: delay, inflight: map[int64]int{}, maxInflight: map[int64]int{}}
	v.srv = httptest.NewServer(http.HandlerFunc(v.serve))
	t.Cleanup(v.srv.Close)
	return v
}

func (v *vendor) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
		Metadata struct {
			MissionID int64 `json:"mission_id"`
			Attempt   int   `json:"attempt"`
		} `json:"metadata"`
	}
	if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) != 1 {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	m := req.Metadata.MissionID
	v.mu.Lock()
	v.calls++
	v.inflight[m]++
	v.maxInflight[m] = max(v.maxInflight[m], v.inflight[m])
	gate := v.gate
	v.mu.Unlock()
	defer func() { v.mu.Lock(); v.inflight[m]--; v.mu.Unlock() }()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	select {
	case <-time.After(v.delay):
	case <-r.Context().Done():
		return
	}
	if v.fail != nil {
		if code := v.fail(req.Messages[0].Content, req.Metadata.Attempt); code != 0 {
			w.WriteHeader(code)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": "done: " + req.Messages[0].Content}}},
		"usage":   map[string]int{"total_tokens": 100},
	})
}

func (v *vendor) stats() (calls int, most map[int64]int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	most = make(map[int64]int, len(v.maxInflight))
	for k, n := range v.maxInflight {
		most[k] = n
	}
	return v.calls, most
}
