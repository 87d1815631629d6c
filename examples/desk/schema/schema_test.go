package schema_test

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/fixtures/localpg"
)

var pg localpg.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// TestMigrate applies the schema from four processes' worth of pools at
// once, then again: every call ends at the newest version, each step is
// applied once.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	url := pg.Database(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			pool, err := pgxpool.New(ctx, url)
			if err != nil {
				errs <- err
				return
			}
			defer pool.Close()
			v, err := schema.Migrate(ctx, pool)
			if err == nil && v != schema.Version() {
				err = assert.AnError
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	var rows int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM schema_version`).Scan(&rows))
	assert.Equal(t, len(schema.Migrations), rows)
}

// TestOpenPredicate checks that the partial indexes' predicate lists
// exactly OpenStatuses, and Statuses holds them first.
func TestOpenPredicate(t *testing.T) {
	assert.Equal(t, "status IN ('"+strings.Join(schema.OpenStatuses, "','")+"')", schema.OpenPredicate)
	assert.Equal(t, schema.OpenStatuses, schema.Statuses[:len(schema.OpenStatuses)])
	assert.Len(t, schema.TokenHash("x"), 64)
}
