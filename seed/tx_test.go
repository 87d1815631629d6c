package seed_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/seed"
)

// A seeder's several steps in one transaction: all of them or nothing.
func TestInTxKeepsAllOrNothing(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := newItems(t, d.name)
			ctx := t.Context()
			load := func(tx *seed.Tx) error {
				if _, err := tx.Copy(ctx, "items", []string{"id", "name", "price", "note"}, itemRows(500), seed.WithBatchRows(64)); err != nil {
					return err
				}
				n, err := tx.Exec(ctx, `INSERT INTO items (id, name, price) VALUES (?, ?, ?)`, int64(1000), "marker", 0.0)
				assert.EqualValues(t, 1, n)
				return err
			}

			// fn fails after both writes: the error comes back as it is and nothing stays.
			boom := errors.New("boom")
			err := e.target.InTx(ctx, func(tx *seed.Tx) error {
				require.NoError(t, load(tx))
				return boom
			})
			require.ErrorIs(t, err, boom)
			assert.Equal(t, 0, count(t, e.target, "items"), "a failed fn leaves nothing")

			// fn panics: rolled back too, and the panic goes on.
			assert.Panics(t, func() {
				_ = e.target.InTx(ctx, func(tx *seed.Tx) error {
					require.NoError(t, load(tx))
					panic("mid-load")
				})
			})
			assert.Equal(t, 0, count(t, e.target, "items"), "a panicking fn leaves nothing")

			// A query with no row says so the same way on both dialects.
			err = e.target.InTx(ctx, func(tx *seed.Tx) error {
				assert.Equal(t, seed.Dialect(d.name), tx.Dialect())
				var name string
				return tx.QueryRow(ctx, `SELECT name FROM items WHERE id = ?`, []any{int64(1)}, &name)
			})
			require.ErrorIs(t, err, seed.ErrNoRows)

			// fn succeeds: both writes are there, readable inside and after.
			require.NoError(t, e.target.InTx(ctx, func(tx *seed.Tx) error {
				if err := load(tx); err != nil {
					return err
				}
				var name string
				require.NoError(t, tx.QueryRow(ctx, `SELECT name FROM items WHERE id = ?`, []any{int64(1000)}, &name))
				assert.Equal(t, "marker", name)
				return nil
			}))
			assert.Equal(t, 501, count(t, e.target, "items"))
		})
	}
}

// An unreachable database is reported before fn runs.
func TestInTxReportsAnUnreachableDatabase(t *testing.T) {
	db, target, _ := newSQLite(t)
	require.NoError(t, db.Close())
	ran := false
	err := target.InTx(t.Context(), func(*seed.Tx) error { ran = true; return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot reach the database")
	assert.False(t, ran)
	assert.ErrorContains(t, seed.DB{}.InTx(t.Context(), func(*seed.Tx) error { return nil }), "zero DB")
}
