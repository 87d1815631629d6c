package kit

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Migration is one step of a schema on PostgreSQL: its version and the
// statements that bring the schema from the version before to it.
type Migration struct {
	Version    int
	Statements []string
}

// Beginner is what Migrate needs: *pgxpool.Pool and *pgx.Conn have it.
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Migrate applies the migrations db lacks, each in one transaction under
// the advisory lock lockKey, so that several processes of the service
// starting at once apply each step once; versions are kept in the table
// schema_version. name ("desk") prefixes its errors. It returns the
// schema version.
func Migrate(ctx context.Context, db Beginner, name string, lockKey int64, migrations []Migration) (int, error) {
	version := 0
	for _, m := range migrations {
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
				return err
			}
			var have int
			if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&have); err != nil {
				return err
			}
			if have >= m.Version {
				version = have
				return nil
			}
			for _, st := range m.Statements {
				if _, err := tx.Exec(ctx, st); err != nil {
					return fmt.Errorf("%w in: %s", err, st)
				}
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, m.Version); err != nil {
				return err
			}
			version = m.Version
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("%s: migrate to schema version %d: %w", name, m.Version, err)
		}
	}
	return version, nil
}
