package seed

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Dialect names the kind of database a [DB] is.
type Dialect string

// The dialects seed writes.
const (
	// DialectPostgres is PostgreSQL, through pgx.
	DialectPostgres Dialect = "postgres"
	// DialectSQLite is SQLite, through database/sql and modernc.org/sqlite.
	DialectSQLite Dialect = "sqlite"
)

// PgxDB is what seed needs from a PostgreSQL handle: *pgxpool.Pool,
// *pgx.Conn and pgx.Tx all have these methods.
type PgxDB interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, rows pgx.CopyFromSource) (int64, error)
}

// DB is a database to seed: PostgreSQL through pgx ([Postgres]) or
// SQLite through database/sql ([SQLite]), or either opened from a URL
// ([Open]). The zero DB is invalid.
type DB struct {
	dialect Dialect
	pg      PgxDB
	sql     *sql.DB
	where   string // for errors: the URL without its password, or a description
	close   func() error
}

// Postgres returns a DB over a pgx pool, connection or transaction.
func Postgres(db PgxDB) DB {
	return DB{dialect: DialectPostgres, pg: db, where: "postgres (" + pgWhere(db) + ")"}
}

// SQLite returns a DB over a database/sql handle opened with the
// "sqlite" driver (modernc.org/sqlite), such as a service's embedded
// database file.
func SQLite(db *sql.DB) DB {
	return DB{dialect: DialectSQLite, sql: db, where: "sqlite"}
}

// Open connects to the database at rawURL: "postgres://…" or
// "postgresql://…" (one pgx connection), or "sqlite:PATH" / "file:PATH" (an
// existing SQLite file; it is not created). It fails, naming the URL without
// its password, when the database cannot be reached. Close the DB when
// done.
func Open(ctx context.Context, rawURL string) (DB, error) {
	where := RedactURL(rawURL)
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		conn, err := pgx.Connect(ctx, rawURL)
		if err != nil {
			return DB{}, fmt.Errorf("seed: cannot reach the database at %s: %s; check that the server runs and the URL is right",
				where, redactErr(err, rawURL))
		}
		return DB{dialect: DialectPostgres, pg: conn, where: where,
			close: func() error { return conn.Close(context.Background()) }}, nil
	case strings.HasPrefix(rawURL, "sqlite:"), strings.HasPrefix(rawURL, "file:"):
		path := strings.TrimPrefix(strings.TrimPrefix(rawURL, "sqlite:"), "file:")
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return DB{}, fmt.Errorf("seed: SQLite URL %q names no file; use sqlite:/path/to/app.db", where)
		}
		// mode=rw: never create a file; immediate transactions take the
		// write lock at BEGIN, so a concurrent writer waits (busy_timeout)
		// instead of failing to upgrade a read lock.
		q := "mode=rw&_txlock=immediate&_pragma=busy_timeout(10000)"
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path, q = path[:i], path[i+1:]+"&"+q
		}
		db, err := sql.Open("sqlite", "file:"+path+"?"+q)
		if err == nil {
			err = db.PingContext(ctx)
		}
		if err != nil {
			if db != nil {
				db.Close()
			}
			return DB{}, fmt.Errorf("seed: cannot open the SQLite database %s: %v; the file must exist (seed does not create one; the service creates it at start)", where, err)
		}
		db.SetMaxOpenConns(1)
		return DB{dialect: DialectSQLite, sql: db, where: where, close: db.Close}, nil
	}
	return DB{}, fmt.Errorf("seed: database URL %q: want postgres://…, postgresql://…, sqlite:PATH or file:PATH", where)
}

// Dialect returns the target's storage backend.
func (t DB) Dialect() Dialect { return t.dialect }

// String names the target without any password.
func (t DB) String() string { return t.where }

// Close closes a DB made by Open; for the others it does nothing (the
// caller owns the handle).
func (t DB) Close() error {
	if t.close == nil {
		return nil
	}
	return t.close()
}

// ping checks that the database answers.
func (t DB) ping(ctx context.Context) error {
	var err error
	switch {
	case t.pg != nil:
		var one int
		err = t.pg.QueryRow(ctx, "SELECT 1").Scan(&one)
	case t.sql != nil:
		err = t.sql.PingContext(ctx)
	default:
		return errors.New("seed: the zero DB has no database; make one with seed.Postgres, seed.SQLite or seed.Open")
	}
	if err != nil {
		return fmt.Errorf("seed: cannot reach the database %s: %v; check that it runs and that the handle is open", t.where, err)
	}
	return nil
}

// RedactURL returns rawURL with any password replaced by "xxxxx", for
// messages: "postgres://u:pw@h/db" → "postgres://u:xxxxx@h/db". It also
// masks password=… in key=value strings and query parameters.
func RedactURL(rawURL string) string {
	s := rawURL
	if u, err := url.Parse(rawURL); err == nil && u.User != nil {
		s = u.Redacted()
	}
	return passwordKV.ReplaceAllString(s, "${1}xxxxx")
}

var passwordKV = regexp.MustCompile(`(?i)(password=)[^&\s]*`)

// redactErr returns err's text with the URL's password, if any, masked.
func redactErr(err error, rawURL string) string {
	msg := err.Error()
	if u, perr := url.Parse(rawURL); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return passwordKV.ReplaceAllString(msg, "${1}xxxxx")
}

// pgWhere describes a pgx handle's server without its password.
func pgWhere(db PgxDB) string {
	type configured interface{ Config() *pgx.ConnConfig }
	if c, ok := db.(configured); ok && c.Config() != nil {
		cfg := c.Config()
		return fmt.Sprintf("%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
	}
	return fmt.Sprintf("%T", db)
}
