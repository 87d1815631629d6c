package seed

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
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
	c := newConfig(opts)
	tx, err := db.begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.rollback()
	n, err := tx.copy(ctx, table, columns, rows, &c, table, c.expectedRows)
	if err != nil {
		err = withCtxErr(ctx, err)
		return 0, fmt.Errorf("seed: copy into %s: %w; nothing was written", table, err)
	}
	if err := tx.commit(ctx); err != nil {
		return 0, fmt.Errorf("seed: copy into %s: commit: %w", table, err)
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

// tx is a transaction on either dialect.
type tx interface {
	// exec runs a statement written with ? placeholders.
	exec(ctx context.Context, query string, args ...any) (int64, error)
	// queryRow runs a query written with ? placeholders and scans its one
	// row; sql.ErrNoRows or pgx.ErrNoRows when there is none.
	queryRow(ctx context.Context, query string, args []any, dest ...any) error
	copy(ctx context.Context, table string, columns []string, rows Rows, c *config, label string, expected int64) (int64, error)
	commit(ctx context.Context) error
	// rollback ends the transaction if still open; safe after commit.
	rollback()
}

func (t DB) begin(ctx context.Context) (tx, error) {
	if err := t.ping(ctx); err != nil {
		return nil, err
	}
	if t.pg != nil {
		ptx, err := t.pg.Begin(ctx)
		if err != nil {
			return nil, fmt.Errorf("seed: begin on %s: %w", t.where, err)
		}
		return &pgTx{tx: ptx}, nil
	}
	stx, err := t.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("seed: begin on %s: %w", t.where, err)
	}
	return &sqlTx{tx: stx}, nil
}

// pgTx is a PostgreSQL transaction.
type pgTx struct{ tx pgx.Tx }

// dollars rewrites ? placeholders as $1, $2, ….
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (p *pgTx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := p.tx.Exec(ctx, dollars(query), args...)
	return tag.RowsAffected(), err
}

func (p *pgTx) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return p.tx.QueryRow(ctx, dollars(query), args...).Scan(dest...)
}

func (p *pgTx) commit(ctx context.Context) error { return p.tx.Commit(ctx) }

func (p *pgTx) rollback() { _ = p.tx.Rollback(context.Background()) }

func (p *pgTx) copy(ctx context.Context, table string, columns []string, rows Rows, c *config, label string, expected int64) (int64, error) {
	var genErr error
	next, stop := iter.Pull(func(yield func([]any) bool) {
		genErr = rows(yield)
	})
	defer stop()
	src := &pullSource{next: next, prog: newProgress(c, label, expected)}
	n, err := p.tx.CopyFrom(ctx, identifier(table), columns, src)
	stop()
	if err == nil {
		err = genErr
	}
	if err != nil {
		if genErr != nil && !errors.Is(err, genErr) {
			err = fmt.Errorf("%w (generator: %v)", err, genErr)
		}
		return 0, err
	}
	src.prog.done()
	return n, nil
}

// identifier splits "schema.table" for pgx.
func identifier(table string) pgx.Identifier { return pgx.Identifier(strings.Split(table, ".")) }

// pullSource is a pgx.CopyFromSource over a pulled generator.
type pullSource struct {
	next func() ([]any, bool)
	row  []any
	prog *progress
}

func (s *pullSource) Next() bool {
	row, ok := s.next()
	if !ok {
		return false
	}
	s.row = row
	s.prog.add(1)
	return true
}

func (s *pullSource) Values() ([]any, error) { return s.row, nil }

func (s *pullSource) Err() error { return nil }

// sqlTx is a SQLite transaction.
type sqlTx struct {
	tx   *sql.Tx
	done bool
}

func (s *sqlTx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *sqlTx) queryRow(ctx context.Context, query string, args []any, dest ...any) error {
	return s.tx.QueryRowContext(ctx, query, args...).Scan(dest...)
}

func (s *sqlTx) commit(context.Context) error {
	s.done = true
	return s.tx.Commit()
}

func (s *sqlTx) rollback() {
	if !s.done {
		_ = s.tx.Rollback()
		s.done = true
	}
}

// quoteSQLite quotes a possibly qualified identifier for SQLite.
func quoteSQLite(name string) string {
	parts := strings.Split(name, ".")
	for i, p := range parts {
		parts[i] = `"` + strings.ReplaceAll(p, `"`, `""`) + `"`
	}
	return strings.Join(parts, ".")
}

// insertSQL is INSERT INTO table (columns) VALUES (?,…),… for n rows.
func insertSQL(table string, columns []string, n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(quoteSQLite(table))
	b.WriteString(" (")
	for i, c := range columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteSQLite(c))
	}
	b.WriteString(") VALUES ")
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", len(columns)), ",") + ")"
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(one)
	}
	return b.String()
}

func (s *sqlTx) copy(ctx context.Context, table string, columns []string, rows Rows, c *config, label string, expected int64) (int64, error) {
	batch := min(c.batchRows, sqliteMaxVariables/len(columns))
	batch = max(batch, 1)
	full, err := s.tx.PrepareContext(ctx, insertSQL(table, columns, batch))
	if err != nil {
		return 0, err
	}
	defer full.Close()
	prog := newProgress(c, label, expected)
	args := make([]any, 0, batch*len(columns))
	var n int64
	var loadErr error
	genErr := rows(func(row []any) bool {
		if len(row) != len(columns) {
			loadErr = fmt.Errorf("row %d has %d values for %d columns", n+int64(len(args)/len(columns))+1, len(row), len(columns))
			return false
		}
		args = append(args, row...)
		if len(args) < cap(args) {
			return true
		}
		if _, loadErr = full.ExecContext(ctx, args...); loadErr != nil {
			return false
		}
		clear(args)
		args = args[:0]
		n += int64(batch)
		prog.add(int64(batch))
		return true
	})
	if loadErr != nil {
		return 0, loadErr
	}
	if genErr != nil {
		return 0, genErr
	}
	if len(args) > 0 {
		k := len(args) / len(columns)
		if _, err := s.tx.ExecContext(ctx, insertSQL(table, columns, k), args...); err != nil {
			return 0, err
		}
		n += int64(k)
		prog.add(int64(k))
	}
	prog.done()
	return n, nil
}
