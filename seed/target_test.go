package seed_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/seed"
)

// The handles seed.Postgres takes.
var (
	_ seed.PgxDB = (*pgxpool.Pool)(nil)
	_ seed.PgxDB = (*pgx.Conn)(nil)
	_ seed.PgxDB = pgx.Tx(nil)
)

func TestOpenReportsUnreachableDatabases(t *testing.T) {
	for _, tc := range []struct {
		name     string
		url      string
		want     []string // in the error
		notWant  string   // never in the error
		dialectd bool
	}{
		// Nothing listens on port 1: the error names the URL minus its password.
		{"url=postgres-closed-port", "postgres://alice:s3cretpw@127.0.0.1:1/app?sslmode=disable&connect_timeout=5",
			[]string{"cannot reach", "127.0.0.1:1", "alice:xxxxx@"}, "s3cretpw", false},
		// A key=value password in the query is masked as well.
		{"url=postgres-query-password", "postgres://127.0.0.1:1/app?sslmode=disable&password=s3cretpw&connect_timeout=5",
			[]string{"cannot reach", "password=xxxxx"}, "s3cretpw", false},
		// The relay creates its SQLite file; seed does not create one.
		{"url=sqlite-missing", "sqlite:" + t.TempDir() + "/missing/relay.db", []string{"cannot open the SQLite database"}, "", false},
		// An unknown scheme says which ones work.
		{"url=mysql", "mysql://bob:s3cretpw@127.0.0.1/x", []string{"want postgres://", "bob:xxxxx@"}, "s3cretpw", false},
		// An empty path.
		{"url=sqlite-empty", "sqlite:", []string{"names no file"}, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := seed.Open(t.Context(), tc.url)
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			if tc.notWant != "" {
				assert.NotContains(t, err.Error(), tc.notWant)
			}
		})
	}
}

func TestOpenSQLite(t *testing.T) {
	db, _, path := newSQLite(t)
	_, err := db.Exec(itemsTable)
	require.NoError(t, err)
	target, err := seed.Open(t.Context(), "sqlite:"+path)
	require.NoError(t, err)
	defer target.Close()
	assert.Equal(t, seed.DialectSQLite, target.Dialect())
	n, err := seed.Copy(t.Context(), target, "items", []string{"id", "name", "price"}, itemRows3(10))
	require.NoError(t, err)
	assert.EqualValues(t, 10, n)
}

// itemRows3 yields n items without their note.
func itemRows3(n int) seed.Rows {
	return func(yield func([]any) bool) error {
		for i := range n {
			if !yield([]any{int64(i + 1), fmt.Sprintf("item %d", i+1), 1.5}) {
				return nil
			}
		}
		return nil
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// user:password in the authority
		{"postgres://u:pw@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		// no password: unchanged
		{"postgres://u@h/db?sslmode=disable", "postgres://u@h/db?sslmode=disable"},
		// password as a query parameter
		{"postgres://h/db?password=pw&sslmode=disable", "postgres://h/db?password=xxxxx&sslmode=disable"},
		// key=value connection string
		{"host=h user=u password=pw dbname=d", "host=h user=u password=xxxxx dbname=d"},
		// SQLite path: unchanged
		{"sqlite:/tmp/relay.db", "sqlite:/tmp/relay.db"},
	} {
		t.Run("url="+tc.in, func(t *testing.T) {
			assert.Equal(t, tc.want, seed.RedactURL(tc.in))
		})
	}
}

func TestPostgresOverAPool(t *testing.T) {
	pool, err := pgxpool.New(t.Context(), postgresURL(t))
	require.NoError(t, err)
	defer pool.Close()
	_, err = pool.Exec(t.Context(), itemsTable)
	require.NoError(t, err)
	target := seed.Postgres(pool)
	assert.Equal(t, seed.DialectPostgres, target.Dialect())
	n, err := seed.Copy(t.Context(), target, "items", []string{"id", "name", "price"}, itemRows3(100))
	require.NoError(t, err)
	assert.EqualValues(t, 100, n)
	var got int64
	require.NoError(t, pool.QueryRow(t.Context(), `SELECT count(*) FROM items`).Scan(&got))
	assert.EqualValues(t, 100, got)
}
