package server_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/examples/relay/server"
)

// percentileCont is PostgreSQL's percentile_cont(p) over values.
func percentileCont(values []int64, p float64) float64 {
	v := slices.Clone(values)
	slices.Sort(v)
	pos := p * float64(len(v)-1)
	lo := math.Floor(pos)
	hi := math.Ceil(pos)
	return float64(v[int(lo)]) + (pos-lo)*float64(v[int(hi)]-v[int(lo)])
}

// TestDashboard checks the dashboard's aggregates against the same figures
// computed in Go, on both backends, with and without the N+1 fault.
func TestDashboard(t *testing.T) {
	forEachBackend(t, func(t *testing.T, dsn string) {
		for _, nPlusOne := range []bool{false, true} {
			t.Run(fmt.Sprintf("n_plus_one=%v", nPlusOne), func(t *testing.T) {
				cfg := testConfig(t, dsn)
				cfg.Faults.DashboardNPlusOne = nPlusOne
				r := startRelay(t, cfg)
				alice, _, carol := people("http://127.0.0.1:9/mcp")
				if !nPlusOne {
					r.DB.Insert(t, alice, carol)
				}
				now := time.Now()
				rng := rand.New(rand.NewPCG(1, 2))
				type want struct {
					durations []int64
					errors    int64
				}
				wants := map[string]*want{}
				var rows []relaytest.Usage
				// Workspace 10 within the hour: three tools, 1, 2 and 157 calls.
				for _, tn := range []struct {
					tool string
					n    int
				}{{"github__a", 1}, {"github__b", 2}, {"linear__c", 157}} {
					tool, n := tn.tool, tn.n
					wants[tool] = &want{}
					for i := range n {
						d := time.Duration(rng.IntN(5_000_000)) * time.Microsecond
						outcome := "ok"
						if i%7 == 3 {
							outcome = []string{"tool_error", "timeout", "upstream_error"}[i%3]
							wants[tool].errors++
						}
						wants[tool].durations = append(wants[tool].durations, d.Microseconds())
						rows = append(rows, relaytest.Usage{WorkspaceID: 10, UserID: 1, ConnectorID: 101, Tool: tool,
							StartedAt: now.Add(-time.Duration(rng.IntN(3000)) * time.Second), Duration: d, Outcome: outcome, Bytes: 100})
					}
				}
				// Outside the window, and another workspace: not counted.
				rows = append(rows,
					relaytest.Usage{WorkspaceID: 10, UserID: 1, Tool: "github__a", StartedAt: now.Add(-2 * time.Hour), Duration: time.Hour, Outcome: "ok"},
					relaytest.Usage{WorkspaceID: 20, UserID: 3, Tool: "github__a", StartedAt: now.Add(-time.Minute), Duration: time.Hour, Outcome: "timeout"})
				if !nPlusOne {
					r.DB.InsertUsage(t, rows)
				}

				status, body := r.get(t, "/api/dashboard?window=1h", alice.Token)
				require.Equal(t, http.StatusOK, status, "%s", body)
				var d server.Dashboard
				require.NoError(t, json.Unmarshal(body, &d))
				assert.Equal(t, int64(10), d.WorkspaceID)
				assert.Equal(t, "1h0m0s", d.Window)
				require.Len(t, d.Tools, 3)
				assert.Equal(t, []string{"linear__c", "github__b", "github__a"},
					[]string{d.Tools[0].Tool, d.Tools[1].Tool, d.Tools[2].Tool}, "most calls first")
				var calls, errs int64
				for _, ts := range d.Tools {
					w := wants[ts.Tool]
					assert.Equal(t, int64(len(w.durations)), ts.Calls, ts.Tool)
					assert.Equal(t, w.errors, ts.Errors, ts.Tool)
					assert.InDelta(t, float64(w.errors)/float64(len(w.durations)), ts.ErrorRate, 1e-9, ts.Tool)
					assert.InDelta(t, percentileCont(w.durations, 0.95), ts.P95DurationUS, 1e-6, ts.Tool)
					calls += ts.Calls
					errs += ts.Errors
				}
				assert.Equal(t, calls, d.Calls)
				assert.Equal(t, errs, d.Errors)

				status, body = r.get(t, "/api/dashboard", carol.Token)
				require.Equal(t, http.StatusOK, status)
				require.NoError(t, json.Unmarshal(body, &d))
				assert.Equal(t, "24h0m0s", d.Window, "the default window")
				require.Len(t, d.Tools, 1)
				assert.Equal(t, 1.0, d.Tools[0].ErrorRate)
			})
		}
	})
}

// TestDashboardWindow checks the window parameter's accepted forms.
func TestDashboardWindow(t *testing.T) {
	r := startRelay(t, testConfig(t, t.TempDir()+"/relay.db"))
	alice, _, _ := people("http://127.0.0.1:9/mcp")
	r.DB.Insert(t, alice)
	tests := []struct {
		window string
		status int
		want   string // the window echoed back
	}{
		{window: "90m", status: 200, want: "1h30m0s"}, // a Go duration
		{window: "7d", status: 200, want: "168h0m0s"}, // days
		{window: "0s", status: 400},                   // empty window
		{window: "-1h", status: 400},                  // negative
		{window: "401d", status: 400},                 // beyond the limit
		{window: "forever", status: 400},              // not a duration
	}
	for _, tc := range tests {
		t.Run("window="+tc.window, func(t *testing.T) {
			status, body := r.get(t, "/api/dashboard?window="+tc.window, alice.Token)
			require.Equal(t, tc.status, status, "%s", body)
			if tc.status != 200 {
				assert.Contains(t, string(body), "window=")
				return
			}
			var d server.Dashboard
			require.NoError(t, json.Unmarshal(body, &d))
			assert.Equal(t, tc.want, d.Window)
			assert.NotNil(t, d.Tools)
		})
	}
}

// BenchmarkDashboard times GET /api/dashboard over 200,000 usage rows of
// one workspace spread over 30 days (20 tools), with and without the N+1
// fault.
//
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench Dashboard -benchtime 20x ./examples/relay/server/
func BenchmarkDashboard(b *testing.B) {
	const rows = 200_000
	for _, be := range backends {
		b.Run("db="+be.name, func(b *testing.B) {
			dsn := be.dsn(b)
			setup := startRelay(b, testConfig(b, dsn))
			alice, _, _ := people("http://127.0.0.1:9/mcp")
			setup.DB.Insert(b, alice)
			q := `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
				INSERT INTO usage (workspace_id, user_id, connector_id, tool, started_at, duration_us, outcome, bytes)
				SELECT 10, 1 + n % 50, 101, 'github__tool_' || (n % 20), ? - (n * 13 % 2592000) * 1000000,
					(n * 7919) % 5000000, CASE WHEN n % 12 = 0 THEN 'tool_error' ELSE 'ok' END, 1024 FROM g`
			args := []any{rows, time.Now().UnixMicro()}
			if be.name == "postgres" {
				q = `INSERT INTO usage (workspace_id, user_id, connector_id, tool, started_at, duration_us, outcome, bytes)
					SELECT 10, 1 + n % 50, 101, 'github__tool_' || (n % 20), now() - (n * 13 % 2592000) * interval '1 second',
						(n * 7919) % 5000000, CASE WHEN n % 12 = 0 THEN 'tool_error' ELSE 'ok' END, 1024
					FROM generate_series(1, $1::int) n`
				args = args[:1]
			}
			_, err := setup.DB.Exec(q, args...)
			require.NoError(b, err)
			_, err = setup.DB.Exec(`ANALYZE`)
			require.NoError(b, err)
			for _, nPlusOne := range []bool{false, true} {
				cfg := testConfig(b, dsn)
				cfg.Faults.DashboardNPlusOne = nPlusOne
				r := startRelay(b, cfg)
				for _, window := range []string{"24h", "7d"} {
					b.Run(fmt.Sprintf("window=%s/n_plus_one=%v", window, nPlusOne), func(b *testing.B) {
						for b.Loop() {
							status, body := r.get(b, "/api/dashboard?window="+window, alice.Token)
							if status != http.StatusOK {
								b.Fatalf("%d %s", status, body)
							}
						}
					})
				}
			}
		})
	}
}
