package seed_test

import (
	"context"
	"database/sql"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/fixtures/localpg"
	"github.com/headroom-dev/headroom/seed"
)

// The PostgreSQL cluster shared by the package's tests; each test gets its
// own database in it.
var pg localpg.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// postgresURL returns the URL of a fresh, empty database, skipping the test
// when the host has no PostgreSQL binaries.
func postgresURL(t testing.TB) string { return pg.Database(t) }

// env is a fresh, empty database of one dialect.
type env struct {
	target seed.DB
	url    string // for seed.Open: a second, independent connection
}

// dialects makes a fresh database of each dialect.
var dialects = []struct {
	name string
	new  func(t *testing.T) env
}{
	{"sqlite", func(t *testing.T) env {
		_, target, path := newSQLite(t)
		return env{target: target, url: "sqlite:" + path}
	}},
	{"postgres", func(t *testing.T) env {
		conn, target := newPostgres(t)
		return env{target: target, url: conn.Config().ConnString()}
	}},
}

// newPostgres returns a connection to a fresh database, closed at cleanup.
func newPostgres(t testing.TB) (*pgx.Conn, seed.DB) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), postgresURL(t))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, seed.Postgres(conn)
}

// newSQLite returns a fresh SQLite database file, closed at cleanup.
func newSQLite(t testing.TB) (*sql.DB, seed.DB, string) {
	t.Helper()
	path := t.TempDir() + "/app.db"
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db, seed.SQLite(db), path
}

// exec runs a statement in a transaction of its own.
func exec(t testing.TB, db seed.DB, query string, args ...any) {
	t.Helper()
	require.NoError(t, db.InTx(t.Context(), func(tx *seed.Tx) error {
		_, err := tx.Exec(t.Context(), query, args...)
		return err
	}), query)
}

// queryRow reads one row in a transaction of its own.
func queryRow(t testing.TB, db seed.DB, query string, dest ...any) {
	t.Helper()
	require.NoError(t, db.InTx(t.Context(), func(tx *seed.Tx) error {
		return tx.QueryRow(t.Context(), query, nil, dest...)
	}), query)
}

// scalar runs a query returning one integer.
func scalar(t testing.TB, db seed.DB, query string) int64 {
	t.Helper()
	var n int64
	queryRow(t, db, query, &n)
	return n
}

// count returns a table's number of rows.
func count(t testing.TB, db seed.DB, table string) int {
	return int(scalar(t, db, "SELECT count(*) FROM "+table))
}
