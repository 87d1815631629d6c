package seed

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// Rows generates the rows of a load: it calls yield once per row, in column
// order, stops early when yield returns false (returning nil), and returns
// an error to abort the load. The generator may reuse the row slice after
// yield returns; it must not modify memory a value points to (a []byte)
// until the load ends.
type Rows func(yield func(row []any) bool) error

// FromSeq adapts an iterator of rows to [Rows].
func FromSeq(seq iter.Seq[[]any]) Rows {
	return func(yield func([]any) bool) error {
		for row := range seq {
			if !yield(row) {
				break
			}
		}
		return nil
	}
}

// Copy streams the rows from rows into table (optionally "schema.table")
// and returns how many it wrote. On PostgreSQL it is one COPY … FROM STDIN
// (BINARY) through pgx, each row encoded as it is generated; on SQLite,
// multi-row INSERTs of [WithBatchRows] rows in one transaction. Either way
// the load is atomic: on an error nothing is written. Values go to the
// driver as they are (on SQLite, pass times in the form the schema stores,
// such as Unix microseconds). With [WithLogf], long loads report progress.
func Copy(ctx context.Context, db DB, table string, columns []string, rows Rows, opts ...Option) (int64, error) {
	if err := checkCopyArgs(table, columns, rows); err != nil {
		return 0, err
	}
	var n int64
	err := db.InTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.Copy(ctx, table, columns, rows, opts...)
		if err != nil {
			return fmt.Errorf("seed: copy into %s: %w; nothing was written", table, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

func checkCopyArgs(table string, columns []string, rows Rows) error {
	var errs []error
	if table == "" {
		errs = append(errs, errors.New("seed: copy: no table name; name the table to load"))
	}
	if len(columns) == 0 {
		errs = append(errs, fmt.Errorf("seed: copy into %q: no columns; list the columns each row fills, in order", table))
	}
	for i, c := range columns {
		if c == "" {
			errs = append(errs, fmt.Errorf("seed: copy into %q: column %d has no name", table, i))
		}
	}
	if rows == nil {
		errs = append(errs, fmt.Errorf("seed: copy into %q: rows is nil; pass a generator function", table))
	}
	return errors.Join(errs...)
}

// withCtxErr makes an error caused by a cancelled or expired ctx say so:
// database/sql, for one, reports a closed statement once the context ends.
func withCtxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		return fmt.Errorf("%w (%v)", cerr, err)
	}
	return err
}
