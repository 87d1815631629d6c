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

// ErrNoRows is what [Tx.QueryRow] returns when its query gives no row, on
// either dialect.
var ErrNoRows = errors.New("seed: no rows in the result")

// Tx is one transaction on a [DB], open for the length of a [DB.InTx]
// call: a product's seeder runs its checks, its loads and its marker row
// in one, so a failure part-way leaves nothing behind. Statements are
// written with ? placeholders on both dialects.
type Tx struct {
	t  tx
	db DB
}

// InTx runs fn inside one transaction on db. It commits when fn returns
// nil and rolls back when fn returns an error (returned as it is) or
// panics. An unreachable database is reported before fn runs.
//
//	err := db.InTx(ctx, func(tx *seed.Tx) error {
//		if _, err := tx.Copy(ctx, "orders", cols, rows); err != nil {
//			return err
//		}
//		_, err := tx.Exec(ctx, `INSERT INTO loaded (name) VALUES (?)`, "orders")
//		return err
//	})
func (t DB) InTx(ctx context.Context, fn func(tx *Tx) error) error {
	inner, err := t.begin(ctx)
	if err != nil {
		return err
	}
	defer inner.rollback()
	if err := fn(&Tx{t: inner, db: t}); err != nil {
		return err
	}
	if err := inner.commit(ctx); err != nil {
		return fmt.Errorf("seed: commit on %s: %w", t, withCtxErr(ctx, err))
	}
	return nil
}

// Exec runs a statement and returns how many rows it affected.
func (t *Tx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	return t.t.exec(ctx, query, args...)
}

// QueryRow runs a query and scans its first row into dest; [ErrNoRows]
// when there is none.
func (t *Tx) QueryRow(ctx context.Context, query string, args []any, dest ...any) error {
	err := t.t.queryRow(ctx, query, args, dest...)
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
		return ErrNoRows
	}
	return err
}

// Copy streams rows into table as [Copy] does, inside the transaction:
// nothing of it is kept unless the transaction commits.
func (t *Tx) Copy(ctx context.Context, table string, columns []string, rows Rows, opts ...Option) (int64, error) {
	if err := checkCopyArgs(table, columns, rows); err != nil {
		return 0, err
	}
	c := newConfig(opts)
	n, err := t.t.copy(ctx, table, columns, rows, &c, table, c.expectedRows)
	if err != nil {
		return 0, withCtxErr(ctx, err)
	}
	return n, nil
}

// Dialect returns the database's kind.
func (t *Tx) Dialect() Dialect { return t.db.dialect }

// String names the database without any password.
func (t *Tx) String() string { return t.db.String() }

// tx is a transaction on either dialect.
type tx interface {
	// exec runs a statement written with ? placeholders.
	exec(ctx context.Context, query string, args ...any) (int64, error)
	// queryRow runs a query written with ? placeholders and scans its one
	// row; sql.ErrNoRows or pgx.ErrNoRows when there is none.
	queryRow(ctx context.Context, query string, args []any, dest ...any) error
	// copy loads rows into table, counting progress under label.
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
