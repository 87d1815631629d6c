package relayseed_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/seed"
)

func TestOpenSQLite(t *testing.T) {
	_, _, path := newSQLite(t, true)
	target, err := seed.Open(t.Context(), "sqlite:"+path)
	require.NoError(t, err)
	defer target.Close()
	assert.Equal(t, seed.DialectSQLite, target.Dialect())
	pop, err := relayseed.Apply(t.Context(), target, relayseed.Spec{Secret: testSecret})
	require.NoError(t, err)
	assert.True(t, pop.Applied)
}

func TestPostgresOverAPool(t *testing.T) {
	url := postgresURL(t)
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	defer pool.Close()
	for _, q := range migrations(schema.Postgres) {
		_, err := pool.Exec(t.Context(), q)
		require.NoError(t, err)
	}
	spec := relayseed.Spec{UsageRows: 100, Secret: testSecret}
	pop, err := relayseed.Apply(t.Context(), seed.Postgres(pool), spec)
	require.NoError(t, err)
	assert.True(t, pop.Applied)
	require.NoError(t, relayseed.Remove(t.Context(), seed.Postgres(pool), spec))
}
