package relayseed_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/fixtures/localpg"
	"github.com/headroom-dev/headroom/seed"
)

// testSecret is the secret of the test populations.
var testSecret = []byte("0123456789abcdef0123456789abcdef")

// The PostgreSQL cluster shared by the package's tests; each test gets its
// own database in it.
var pg localpg.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// postgresURL returns the URL of a fresh, empty database, skipping the test
// when the host has no PostgreSQL binaries.
func postgresURL(t testing.TB) string { return pg.Database(t) }

// newPostgres returns a connection to a fresh database with the relay's
// schema (when migrate), closed at cleanup.
func newPostgres(t testing.TB, migrate bool) (*pgx.Conn, seed.DB) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, postgresURL(t))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	if migrate {
		for _, q := range migrations(schema.Postgres) {
			_, err := conn.Exec(ctx, q)
			require.NoError(t, err, q)
		}
	}
	return conn, seed.Postgres(conn)
}

// newSQLite returns a fresh SQLite database file with the relay's schema
// (when migrate), closed at cleanup.
func newSQLite(t testing.TB, migrate bool) (*sql.DB, seed.DB, string) {
	t.Helper()
	path := t.TempDir() + "/relay.db"
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	if migrate {
		for _, q := range migrations(schema.SQLite) {
			_, err := db.Exec(q)
			require.NoError(t, err, q)
		}
	}
	return db, seed.SQLite(db), path
}

// migrations are the statements that apply the relay's schema as its
// migrations describe: version table, each migration, its version.
func migrations(d schema.Dialect) []string {
	qs := []string{schema.VersionTable}
	for _, m := range schema.Migrations(d) {
		qs = append(qs, m.Statements...)
		qs = append(qs, fmt.Sprintf("INSERT INTO schema_version (version) VALUES (%d)", m.Version))
	}
	return qs
}

// tables are the population's tables with their columns in a fixed order;
// times are compared as Unix microseconds so both dialects digest alike.
var tables = []struct{ name, columns string }{
	{"workspaces", "id, name, created_at"},
	{"users", "id, workspace_id, name, token_hash, created_at"},
	{"connectors", "id, user_id, name, upstream_url"},
	{"usage", "id, workspace_id, user_id, connector_id, tool, started_at, duration_us, outcome, bytes"},
	{"events", "id, workspace_id, user_id, kind, payload, created_at"},
	{"seed_marker", "name, spec_hash"},
}

// querier runs a query on either dialect and calls row with each row's
// values.
type querier func(ctx context.Context, q string, row func([]any)) error

func sqlQuerier(db *sql.DB) querier {
	return func(ctx context.Context, q string, row func([]any)) error {
		rs, err := db.QueryContext(ctx, q)
		if err != nil {
			return err
		}
		defer rs.Close()
		cols, _ := rs.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rs.Next() {
			if err := rs.Scan(ptrs...); err != nil {
				return err
			}
			row(vals)
		}
		return rs.Err()
	}
}

func pgQuerier(conn *pgx.Conn) querier {
	return func(ctx context.Context, q string, row func([]any)) error {
		rs, err := conn.Query(ctx, q)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			vals, err := rs.Values()
			if err != nil {
				return err
			}
			row(vals)
		}
		return rs.Err()
	}
}

// digest returns a SHA-256 per table of its rows in id order, every value
// canonicalized (times as Unix microseconds), so two databases — of either
// dialect — holding the same data digest alike.
func digest(t testing.TB, q querier) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, tb := range tables {
		h := sha256.New()
		n := 0
		err := q(context.Background(), "SELECT "+tb.columns+" FROM "+tb.name+" ORDER BY 1", func(vals []any) {
			n++
			for _, v := range vals {
				switch x := v.(type) {
				case time.Time:
					fmt.Fprintf(h, "%d|", x.UnixMicro())
				case []byte:
					fmt.Fprintf(h, "%s|", x)
				default:
					fmt.Fprintf(h, "%v|", x)
				}
			}
			h.Write([]byte("\n"))
		})
		require.NoError(t, err, tb.name)
		out[tb.name] = fmt.Sprintf("%d rows %s", n, hex.EncodeToString(h.Sum(nil))[:16])
	}
	return out
}

// scalar runs a query returning one number.
func scalar(t testing.TB, q querier, query string) float64 {
	t.Helper()
	var out float64
	got := false
	require.NoError(t, q(context.Background(), query, func(vals []any) {
		got = true
		switch x := vals[0].(type) {
		case int64:
			out = float64(x)
		case int32:
			out = float64(x)
		case float64:
			out = x
		case nil:
			out = 0
		default:
			t.Fatalf("scalar %q: unexpected %T", query, x)
		}
	}), query)
	require.True(t, got, query)
	return out
}
