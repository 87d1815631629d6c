package seed_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/seed"
)

// itemsTable is a table of "someone else's product" for the generic loader.
const itemsTable = `CREATE TABLE items (id BIGINT PRIMARY KEY, name TEXT NOT NULL, price DOUBLE PRECISION NOT NULL, note TEXT)`

// itemRows yields n items, reusing one row slice as a generator may.
func itemRows(n int) seed.Rows {
	return func(yield func([]any) bool) error {
		row := make([]any, 4)
		for i := range n {
			row[0], row[1], row[2] = int64(i+1), fmt.Sprintf("item %d", i+1), float64(i)/4
			row[3] = nil
			if i%3 == 0 {
				row[3] = "every third"
			}
			if !yield(row) {
				return nil
			}
		}
		return nil
	}
}

// newItems returns a fresh database of the dialect with the items table.
func newItems(t *testing.T, dialect string) env {
	for _, d := range dialects {
		if d.name == dialect {
			e := d.new(t)
			_, err := seed.Copy(t.Context(), e.target, "items", []string{"id"}, seed.FromSeq(func(func([]any) bool) {}))
			require.Error(t, err, "no items table yet")
			exec(t, e.target, itemsTable)
			return e
		}
	}
	t.Fatalf("no dialect %q", dialect)
	return env{}
}

func TestCopyLoadsAnyTable(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			for _, tc := range []struct {
				name  string
				table string
				rows  int
				opts  []seed.Option
			}{
				// Many rows: several full batches and a partial one on SQLite.
				{"rows=10000", "items", 10_000, nil},
				// A batch size that does not divide the row count.
				{"batch=7", "items", 100, []seed.Option{seed.WithBatchRows(7)}},
				// A batch far above SQLite's variable limit is capped.
				{"batch=huge", "items", 20_000, []seed.Option{seed.WithBatchRows(1_000_000)}},
				// No rows at all.
				{"rows=0", "items", 0, nil},
				// A schema-qualified name.
				{"table=qualified", map[string]string{"sqlite": "main.items", "postgres": "public.items"}[d.name], 10, nil},
			} {
				t.Run(tc.name, func(t *testing.T) {
					e := newItems(t, d.name)
					n, err := seed.Copy(t.Context(), e.target, tc.table, []string{"id", "name", "price", "note"}, itemRows(tc.rows), tc.opts...)
					require.NoError(t, err)
					assert.Equal(t, int64(tc.rows), n)
					assert.Equal(t, tc.rows, count(t, e.target, "items"))
					if tc.rows == 0 {
						return
					}
					assert.EqualValues(t, tc.rows*(tc.rows+1)/2, scalar(t, e.target, "SELECT CAST(sum(id) AS BIGINT) FROM items"), "every id once")
					assert.EqualValues(t, (tc.rows+2)/3, scalar(t, e.target, "SELECT count(note) FROM items"), "NULLs stay NULL")
					var name string
					var price float64
					queryRow(t, e.target, fmt.Sprintf("SELECT name, price FROM items WHERE id = %d", tc.rows), &name, &price)
					assert.Equal(t, fmt.Sprintf("item %d", tc.rows), name, "the reused row slice did not leak values")
					assert.Equal(t, float64(tc.rows-1)/4, price)
				})
			}
		})
	}
}

func TestCopyFailureWritesNothing(t *testing.T) {
	boom := errors.New("generator broke")
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				rows seed.Rows
				want string
			}{
				// The generator fails after many rows.
				{"fail=generator", func(yield func([]any) bool) error {
					for i := range 5000 {
						if !yield([]any{int64(i + 1), "x", 1.0, nil}) {
							return nil
						}
					}
					return boom
				}, "generator broke"},
				// A row with the wrong number of values.
				{"fail=short-row", func(yield func([]any) bool) error {
					for i := range 5000 {
						row := []any{int64(i + 1), "x", 1.0, nil}
						if i == 4321 {
							row = row[:3]
						}
						if !yield(row) {
							return nil
						}
					}
					return nil
				}, "3 values"},
				// A duplicate key the database rejects.
				{"fail=duplicate", func(yield func([]any) bool) error {
					for i := range 5000 {
						if !yield([]any{int64(i%4000 + 1), "x", 1.0, nil}) {
							return nil
						}
					}
					return nil
				}, "items"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					e := newItems(t, d.name)
					n, err := seed.Copy(t.Context(), e.target, "items", []string{"id", "name", "price", "note"}, tc.rows)
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.want)
					assert.Contains(t, err.Error(), "nothing was written")
					assert.Zero(t, n)
					assert.Zero(t, count(t, e.target, "items"))
				})
			}
		})
	}
}

func TestCopyRejectsBadArguments(t *testing.T) {
	_, target, _ := newSQLite(t)
	for _, tc := range []struct {
		name    string
		table   string
		columns []string
		rows    seed.Rows
		want    string
	}{
		// No table name.
		{"table=empty", "", []string{"a"}, itemRows(1), "no table name"},
		// No columns.
		{"columns=none", "items", nil, itemRows(1), "no columns"},
		// A blank column name.
		{"columns=blank", "items", []string{"a", ""}, itemRows(1), "column 1 has no name"},
		// No generator.
		{"rows=nil", "items", []string{"a"}, nil, "rows is nil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := seed.Copy(t.Context(), target, tc.table, tc.columns, tc.rows)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := seed.Copy(t.Context(), seed.DB{}, "items", []string{"a"}, itemRows(1))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "zero DB")
}

func TestCopyReportsProgress(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := newItems(t, d.name)
			var lines []string
			_, err := seed.Copy(t.Context(), e.target, "items", []string{"id", "name", "price", "note"}, itemRows(50_000),
				seed.WithLogf(func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }),
				seed.WithProgressEvery(1), seed.WithExpectedRows(50_000))
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(lines), 3, "progress lines and a summary")
			assert.Contains(t, lines[0], "seed: items: ")
			assert.Contains(t, lines[0], "of 50,000 rows (")
			assert.Contains(t, lines[len(lines)-1], "50,000 rows in ")
		})
	}
}

func TestCopyStopsOnCancel(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := newItems(t, d.name)
			target, err := seed.Open(t.Context(), e.url)
			require.NoError(t, err)
			defer target.Close()
			ctx, cancel := context.WithCancel(t.Context())
			// A generator far longer than the cancellation lets run.
			endless := func(yield func([]any) bool) error {
				for i := int64(1); i <= 10_000_000; i++ {
					if i == 10_000 {
						cancel()
					}
					if !yield([]any{i, "x", 1.0, nil}) {
						return nil
					}
				}
				return errors.New("the load was not cancelled")
			}
			_, err = seed.Copy(ctx, target, "items", []string{"id", "name", "price", "note"}, endless)
			require.Error(t, err)
			assert.ErrorIs(t, err, context.Canceled)
			assert.Zero(t, count(t, e.target, "items"))
		})
	}
}
