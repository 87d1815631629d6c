package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/examples/relay/server"
	"github.com/headroom-dev/headroom/fixtures/localpg"
)

// One PostgreSQL cluster serves the whole test binary; each test gets a
// database of its own.
var pg localpg.Shared

func TestMain(m *testing.M) {
	if os.Getenv(holderEnv) != "" {
		os.Exit(holdStreamsMain())
	}
	os.Exit(pg.Run(m))
}

// pgURL returns the URL of a fresh, empty database, skipping the test when
// the host has no PostgreSQL binaries.
func pgURL(t testing.TB) string { return pg.Database(t) }

// backend is a storage backend a test runs on.
type backend struct {
	name string
	dsn  func(t testing.TB) string // a PostgreSQL URL or a SQLite path
}

var backends = []backend{
	{"sqlite", func(t testing.TB) string { return t.TempDir() + "/relay.db" }},
	{"postgres", pgURL},
}

// forEachBackend runs f as subtest db=<backend> with a fresh database.
func forEachBackend(t *testing.T, f func(t *testing.T, dsn string)) {
	for _, b := range backends {
		t.Run("db="+b.name, func(t *testing.T) { f(t, b.dsn(t)) })
	}
}

// testConfig returns a configuration for dsn with quiet logs.
func testConfig(t testing.TB, dsn string) server.Config {
	cfg := server.DefaultConfig()
	if strings.HasPrefix(dsn, "postgres") {
		cfg.DatabaseURL = dsn
	} else {
		cfg.SQLitePath = dsn
	}
	cfg.DBMaxConns = 4
	cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return cfg
}

// testWriter sends logs to t.Log, so they show only for a failing test.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// relay is a relay under test, served by httptest.
type relay struct {
	*server.Server
	URL    string
	Client *http.Client
	DB     *relaytest.DBHandle
}

// startRelay starts a relay with cfg and closes it in t.Cleanup.
func startRelay(t testing.TB, cfg server.Config) *relay {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := server.New(ctx, cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(func() { s.Close() })
	dsn := cfg.DatabaseURL
	if dsn == "" {
		dsn = cfg.SQLitePath
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(tr.CloseIdleConnections)
	return &relay{Server: s, URL: ts.URL, Client: &http.Client{Transport: tr}, DB: relaytest.DB(t, dsn)}
}

// rpc sends one JSON-RPC request as token.
func (r *relay) rpc(t testing.TB, token, method string, params any) relaytest.Reply {
	t.Helper()
	return relaytest.RPC(t, r.Client, r.URL+"/mcp", token, method, params)
}

// call sends tools/call and returns the tool's text and isError, failing t
// on anything but a tool result.
func (r *relay) call(t testing.TB, token, tool string, args any) (string, bool) {
	t.Helper()
	rep := r.rpc(t, token, "tools/call", map[string]any{"name": tool, "arguments": args})
	require.Equal(t, http.StatusOK, rep.Status, "%s", rep.Body)
	require.Nil(t, rep.Error, "%s", rep.Body)
	return rep.ToolResult(t)
}

// stream opens GET path as token.
func (r *relay) stream(t testing.TB, path, token string, headers ...string) *relaytest.Stream {
	t.Helper()
	return relaytest.OpenStream(t, r.Client, r.URL+path, token, headers...)
}

// get sends GET path as token and returns status and body.
func (r *relay) get(t testing.TB, path, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.URL+path, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := r.Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// usageOutcomes returns the outcomes of the usage rows of user, oldest first.
func (r *relay) usageOutcomes(t testing.TB, userID int64) []string {
	t.Helper()
	rows, err := r.DB.Query(r.DB.Q(`SELECT outcome FROM usage WHERE user_id = ? ORDER BY id`), userID)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		require.NoError(t, rows.Scan(&o))
		out = append(out, o)
	}
	require.NoError(t, rows.Err())
	return out
}

// cfgDialect returns the schema dialect of dsn.
func cfgDialect(dsn string) schema.Dialect {
	if strings.HasPrefix(dsn, "postgres") {
		return schema.Postgres
	}
	return schema.SQLite
}

// schemaVersions returns the migrations of d.
func schemaVersions(d schema.Dialect) []schema.Migration { return schema.Migrations(d) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// alice and bob share workspace 10; carol is alone in workspace 20.
func people(upstreamURL string) (alice, bob, carol relaytest.User) {
	alice = relaytest.User{ID: 1, WorkspaceID: 10, Token: "alice-token", Connectors: []relaytest.Connector{
		{ID: 101, Name: "github", URL: upstreamURL}, {ID: 102, Name: "linear", URL: upstreamURL}}}
	bob = relaytest.User{ID: 2, WorkspaceID: 10, Token: "bob-token", Connectors: []relaytest.Connector{
		{ID: 201, Name: "github", URL: upstreamURL}}}
	carol = relaytest.User{ID: 3, WorkspaceID: 20, Token: "carol-token", Connectors: []relaytest.Connector{
		{ID: 301, Name: "github", URL: upstreamURL}}}
	return
}
