//go:build load

package scenarios

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/sse"
	"github.com/headroom-dev/headroom/mockupstream"
	"github.com/headroom-dev/headroom/seed"
)

// TestLoad_Smoke checks that one relay instance (1 CPU / 512 MiB) on
// PostgreSQL or on its embedded SQLite, reached through Caddy over HTTPS,
// holds a ladder of modeled gateway users — each holding its notification
// stream and making bursty tool calls, listings and dashboard views
// against the calibrated slow upstream, over a seeded population — while
// tool calls keep a p95 under 15 s, calls without an answer (transport
// errors, timeouts, 5xx, shed load) stay under 0.5%, tool errors under 15%
// (8% are modeled), every completed call reaches its user's stream, and no
// stream misses a keepalive.
//
// Knobs: USERS (levels), RAMP, HOLD, GAP (a user's mean gap between
// calls), SEED, LOADTEST_BACKEND, LOADTEST_DB. With -short the ladder is small, calls
// are frequent and the upstream fast, for under a minute of load on each
// backend; latency bars are then left out so that the short run cannot
// flake, and correctness checks stay.
func TestLoad_Smoke(t *testing.T) {
	for _, backend := range backends(t) {
		t.Run("backend="+backend, func(t *testing.T) {
			for _, db := range databases(t) {
				t.Run("db="+string(db), func(t *testing.T) { smoke(t, backend, db) })
			}
		})
	}
}

func smoke(t *testing.T, backend string, database fixtures.Database) {
	k := newKnobs(t)
	k.Set("LOADTEST_BACKEND", backend)
	levels := k.Levels("USERS", "200,400,800", "20,40,80")
	ramp := k.Duration("RAMP", "30s", "5s")
	hold := k.Duration("HOLD", "90s", "10s")
	gap := k.Duration("GAP", "90s", "1s")
	seedN := k.Uint("SEED", "1", "1")

	upstream := mockupstream.Calibrated()
	upstream.Seed = seedN
	if testing.Short() {
		// A fast upstream with the calibrated shape: median 200 ms,
		// 5% over 2 s, capped at 5 s.
		upstream.Call = mockupstream.Latency{Median: mockupstream.Duration(200 * time.Millisecond),
			P95: mockupstream.Duration(2 * time.Second), Cap: mockupstream.Duration(5 * time.Second)}
	}
	k.Set("upstream_call", fmt.Sprintf("median %v, p95 %v, cap %v", time.Duration(upstream.Call.Median), time.Duration(upstream.Call.P95), time.Duration(upstream.Call.Cap)))
	k.Set("upstream_tool_errors", upstream.ToolErrors)

	stack := fixtures.Start(t,
		fixtures.WithBackend(backend),
		fixtures.WithDatabase(database),
		fixtures.WithUpstreamBehavior(upstream),
		fixtures.WithLogDir(logDir(t)),
	)

	// The population the relay serves: enough users for the top step,
	// with a month of usage history for the dashboard to aggregate.
	dbURL := stack.DatabaseURL
	if database == fixtures.SQLite {
		dbURL = "sqlite:" + filepath.ToSlash(stack.SQLitePath)
	}
	db, err := seed.Open(t.Context(), dbURL)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	spec := seed.Smoke
	spec.UsersPerWorkspace = int(math.Ceil(levels[len(levels)-1] / float64(max(spec.Workspaces, 1))))
	spec.UsageRows = 20_000
	if !testing.Short() {
		spec.UsageRows = 200_000
	}
	spec.Seed = seedN
	spec.Secret = []byte("headroom smoke secret")
	spec.UpstreamURL = stack.UpstreamURLFromTarget + "/mcp"
	spec.End = time.Now().Truncate(time.Hour)
	pop, err := seed.Apply(t.Context(), db, spec, seed.WithLogf(t.Logf))
	require.NoError(t, err)
	k.Set("population", fmt.Sprintf("%d users, %d usage rows over %d days", len(pop.Users), spec.UsageRows, spec.Days))

	// One connection per user at the top step: users never queue for one.
	top := int(levels[len(levels)-1])
	hc, err := httpc.New(httpc.Options{RootCAPEM: stack.CACertPEM, Timeout: 60 * time.Second, MaxConnsPerHost: top + top/10})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	// Gaps: bursts of ~5 calls with a median of 6 s inside a burst,
	// scaled so that the overall mean gap is GAP.
	scale := gap.Seconds() / 90
	gaps, err := dist.CalibratedBursts(dist.Seconds(6*scale), dist.Seconds(20*scale), 5, gap)
	require.NoError(t, err)
	gw := &mcp.Gateway{
		URL:          stack.URL + "/mcp",
		DashboardURL: stack.URL + "/api/dashboard",
		HTTP:         hc,
		Token:        func(i int) string { return pop.Token(pop.Users[i%len(pop.Users)].ID) },
		Gaps:         gaps,
	}
	users, err := gw.Users()
	require.NoError(t, err)

	checks := []loadtest.Check{
		// Calls that got no answer (transport errors, timeouts, 5xx, shed
		// load) under 0.5%; tool errors are the upstream's, checked apart.
		loadtest.FailuresBelow(mcp.KindCallTool, 0.005, loadtest.AppError),
		loadtest.RateBelow(mcp.KindCallTool, loadtest.AppError, 0.15),
		loadtest.RateBelow("", loadtest.HTTP5xx, 0.005),
		// Every completed call reaches its user's stream.
		loadtest.FailuresBelow(sse.KindDelivery, 0.001),
		healthyStreams(),
		stack.ComponentsUp(),
	}
	if !testing.Short() {
		checks = append(checks,
			loadtest.LatencyBelow(mcp.KindCallTool, 95, 15*time.Second),
			loadtest.LatencyBelow(sse.DefaultFanoutKind, 95, time.Second),
		)
	}
	res := loadtest.Test(t, loadtest.Scenario{
		Workload: users,
		Plan:     loadtest.Levels(ramp, hold, levels...),
		Checks:   checks,
		Seed:     seedN,
		Samplers: stack.Samplers(),
		System:   stack.System(),
		Params:   k.Params(),
		// Calls in flight at the end of a hold are waited for up to
		// the upstream's cap.
		Drain: time.Duration(upstream.Call.Cap) + 5*time.Second,
	})
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}

// backends returns the backends to run on: LOADTEST_BACKEND when it names
// one; otherwise the default (Docker when an engine answers, else local),
// and with -short both when Docker answers, so that every short run proves
// the scenario on each.
func backends(t *testing.T) []string {
	switch b := os.Getenv("LOADTEST_BACKEND"); b {
	case fixtures.BackendDocker, fixtures.BackendLocal:
		return []string{b}
	case "", fixtures.BackendAuto:
	default:
		t.Fatalf("LOADTEST_BACKEND=%q: give auto, docker or local", b)
	}
	if !fixtures.DockerAvailable(t.Context()) {
		return []string{fixtures.BackendLocal}
	}
	if testing.Short() {
		return []string{fixtures.BackendDocker, fixtures.BackendLocal}
	}
	return []string{fixtures.BackendDocker}
}

// databases returns the relay's databases to run on: LOADTEST_DB when it
// names one (postgres, sqlite) or "all"; otherwise PostgreSQL, and with
// -short both, so that every short run proves the scenario on each.
func databases(t *testing.T) []fixtures.Database {
	switch v := os.Getenv("LOADTEST_DB"); v {
	case string(fixtures.Postgres), string(fixtures.SQLite):
		return []fixtures.Database{fixtures.Database(v)}
	case "all":
		return []fixtures.Database{fixtures.Postgres, fixtures.SQLite}
	case "":
	default:
		t.Fatalf("LOADTEST_DB=%q: give postgres, sqlite or all", v)
	}
	if testing.Short() {
		return []fixtures.Database{fixtures.Postgres, fixtures.SQLite}
	}
	return []fixtures.Database{fixtures.Postgres}
}

// healthyStreams checks that every user's stream held: no keepalive was
// missed and no stream broke the protocol.
func healthyStreams() loadtest.Check {
	return loadtest.Custom("streams healthy", func(s *loadtest.StepResult) error {
		for _, kind := range []string{sse.KindHealth, sse.KindMalformed} {
			if k := s.Kind(kind); k != nil && k.Total() > 0 {
				return fmt.Errorf("%d %s sample(s): %v", k.Total(), kind, k.Errors)
			}
		}
		return nil
	})
}

// logDir keeps the components' logs beside the test's results.
func logDir(t *testing.T) string {
	res, _, err := loadtest.Paths(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	return res[:len(res)-len(".json")] + ".logs"
}
