package schema_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

func TestSQLiteMigrationsApplyTwice(t *testing.T) {
	db, err := sql.Open("sqlite", t.TempDir()+"/relay.db")
	require.NoError(t, err)
	defer db.Close()
	for range 2 {
		_, err := db.Exec(schema.VersionTable)
		require.NoError(t, err)
		for _, m := range schema.Migrations(schema.SQLite) {
			for _, s := range m.Statements {
				_, err := db.Exec(s)
				require.NoError(t, err, s)
			}
		}
	}
	_, err = db.Exec(`INSERT INTO workspaces (id, name) VALUES (1, 'w')`)
	require.NoError(t, err)
	var created int64
	require.NoError(t, db.QueryRow(`SELECT created_at FROM workspaces`).Scan(&created))
	require.Greater(t, created, int64(1_600_000_000_000_000), "created_at in Unix microseconds")
}

func TestTokenHash(t *testing.T) {
	require.Equal(t, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", schema.TokenHash("test"))
}
