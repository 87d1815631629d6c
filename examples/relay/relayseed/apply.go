package relayseed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/seed"
)

// advisoryLockKey serializes concurrent Apply and Remove calls on one
// PostgreSQL database ("seed" in ASCII).
const advisoryLockKey = 0x73656564

// Apply writes the population spec describes into db, which must already
// hold the relay's schema (the relay applies it at start; see
// examples/relay/schema). Everything — workspaces, users with their token
// hashes, connectors, usage, events and the seed_marker row — is written in
// one transaction: a failure part-way leaves nothing behind.
//
// Apply is idempotent. When db already holds this spec's population (same
// Spec.Hash, same secret) it writes nothing and returns the population with
// Applied false. When db holds another population, or rows in the ids this
// one needs that no marker accounts for, it returns an error saying so and
// how to remove it. An invalid spec or an unreachable database is reported
// before anything is written.
func Apply(ctx context.Context, db seed.DB, spec Spec, opts ...Option) (*Population, error) {
	pop, err := spec.Population()
	if err != nil {
		return nil, err
	}
	c := newConfig(opts)
	s := pop.Spec
	start := time.Now()
	err = db.InTx(ctx, func(tx *seed.Tx) error {
		if err := lock(ctx, tx); err != nil {
			return err
		}
		marker, err := readMarker(ctx, tx)
		if err != nil {
			return err
		}
		switch {
		case marker.present && marker.name == s.Name && marker.hash == pop.Hash:
			return checkSecret(ctx, tx, pop)
		case marker.present:
			return fmt.Errorf("relayseed: %s already holds population %q with spec hash %s, seeded by a different spec than this one (%q, hash %s); apply that same spec, or take the old population out first with relayseed.Remove(ctx, db, <the spec that seeded it>) (or use a fresh database)",
				db, marker.name, marker.hash, s.Name, pop.Hash)
		}
		if err := checkFree(ctx, tx, pop); err != nil {
			return err
		}
		for _, t := range pop.Tables(dialect(db.Dialect())) {
			if t.Len == 0 {
				continue
			}
			n, err := tx.Copy(ctx, t.Name, t.Columns, t.Rows, append(slices.Clip(c.copy), seed.WithExpectedRows(t.Len))...)
			if err == nil && n != t.Len {
				err = fmt.Errorf("wrote %d rows, expected %d", n, t.Len)
			}
			if err != nil {
				return fmt.Errorf("relayseed: apply %q to %s: table %s: %w; nothing was written (rolled back)", s.Name, db, t.Name, err)
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO seed_marker (name, spec_hash) VALUES (?, ?)`, s.Name, pop.Hash); err != nil {
			return fmt.Errorf("relayseed: apply %q to %s: write seed_marker: %w; nothing was written (rolled back)", s.Name, db, err)
		}
		pop.Applied = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !pop.Applied {
		c.log("relayseed: %s is already in %s; nothing written", pop, db)
		return pop, nil
	}
	c.log("relayseed: wrote %s to %s in %v", pop, db, time.Since(start).Round(time.Millisecond))
	return pop, nil
}

// Remove takes the population spec describes out of db: its usage and
// events rows (including any the relay recorded since in its workspaces),
// connectors, users, workspaces and its seed_marker row, in one
// transaction. The secret is not needed. Removing a population that is not
// there does nothing; when db holds a population seeded by a different
// spec, Remove refuses, since the rows to delete follow from the spec that
// seeded them.
func Remove(ctx context.Context, db seed.DB, spec Spec, opts ...Option) error {
	s := spec.normalized()
	if err := s.validate(false); err != nil {
		return err
	}
	hash := s.Hash()
	c := newConfig(opts)
	start := time.Now()
	var counts [6]int64
	removed := false
	err := db.InTx(ctx, func(tx *seed.Tx) error {
		if err := lock(ctx, tx); err != nil {
			return err
		}
		marker, err := readMarker(ctx, tx)
		if err != nil {
			return err
		}
		switch {
		case !marker.present:
			return nil
		case marker.name != s.Name || marker.hash != hash:
			return fmt.Errorf("relayseed: %s holds population %q with spec hash %s, not this spec's (%q, hash %s); pass the spec that seeded it to Remove",
				db, marker.name, marker.hash, s.Name, hash)
		}
		w := int64(s.Workspaces)
		users := w * int64(s.UsersPerWorkspace)
		for i, q := range []struct {
			sql  string
			args []any
		}{
			{`DELETE FROM usage WHERE workspace_id BETWEEN 1 AND ?`, []any{w}},
			{`DELETE FROM events WHERE workspace_id BETWEEN 1 AND ?`, []any{w}},
			{`DELETE FROM connectors WHERE user_id BETWEEN 1 AND ?`, []any{users}},
			{`DELETE FROM users WHERE id BETWEEN 1 AND ?`, []any{users}},
			{`DELETE FROM workspaces WHERE id BETWEEN 1 AND ?`, []any{w}},
			{`DELETE FROM seed_marker WHERE name = ?`, []any{s.Name}},
		} {
			n, err := tx.Exec(ctx, q.sql, q.args...)
			if err != nil {
				return fmt.Errorf("relayseed: remove %q from %s: %s: %w; nothing was removed (rolled back)", s.Name, db, q.sql, err)
			}
			counts[i] = n
		}
		removed = true
		return nil
	})
	switch {
	case err != nil:
		return err
	case !removed:
		c.log("relayseed: %s holds no population; nothing to remove", db)
		return nil
	}
	c.log("relayseed: removed population %q (spec hash %s) from %s in %v: %d usage rows, %d events, %d connectors, %d users, %d workspaces",
		s.Name, hash, db, time.Since(start).Round(time.Millisecond), counts[0], counts[1], counts[2], counts[3], counts[4])
	return nil
}

// dialect is the relay's name for a database's kind.
func dialect(d seed.Dialect) schema.Dialect {
	if d == seed.DialectSQLite {
		return schema.SQLite
	}
	return schema.Postgres
}

// lock takes a transaction-scoped lock so that two seeders of one database
// take turns. On SQLite the first write of the transaction serializes them.
func lock(ctx context.Context, tx *seed.Tx) error {
	if tx.Dialect() != seed.DialectPostgres {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(?)`, int64(advisoryLockKey)); err != nil {
		return fmt.Errorf("relayseed: lock %s: %w", tx, err)
	}
	return nil
}

type markerRow struct {
	present    bool
	name, hash string
}

// readMarker returns the database's seed_marker row (the first by name), or
// an error saying to apply the schema when the table does not exist.
func readMarker(ctx context.Context, tx *seed.Tx) (markerRow, error) {
	if err := checkSchema(ctx, tx); err != nil {
		return markerRow{}, err
	}
	var m markerRow
	err := tx.QueryRow(ctx, `SELECT name, spec_hash FROM seed_marker ORDER BY name LIMIT 1`, nil, &m.name, &m.hash)
	switch {
	case errors.Is(err, seed.ErrNoRows):
		return markerRow{}, nil
	case err != nil:
		return markerRow{}, fmt.Errorf("relayseed: read seed_marker in %s: %w", tx, err)
	}
	m.present = true
	return m, nil
}

// checkSchema reports missing tables of the relay's schema.
func checkSchema(ctx context.Context, tx *seed.Tx) error {
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('workspaces', 'users', 'connectors', 'usage', 'events', 'seed_marker')`
	if tx.Dialect() == seed.DialectPostgres {
		q = `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name IN ('workspaces', 'users', 'connectors', 'usage', 'events', 'seed_marker')`
	}
	var n int64
	if err := tx.QueryRow(ctx, q, nil, &n); err != nil {
		return fmt.Errorf("relayseed: inspect the schema of %s: %w", tx, err)
	}
	if n != 6 {
		return fmt.Errorf("relayseed: %s lacks the relay's tables (found %d of workspaces, users, connectors, usage, events, seed_marker); apply the schema first: start the relay once, or run the migrations of examples/relay/schema", tx, n)
	}
	return nil
}

// checkSecret reports a population seeded by the same spec with another
// secret: its tokens would not authenticate.
func checkSecret(ctx context.Context, tx *seed.Tx, pop *Population) error {
	u := pop.Users[0]
	var stored string
	if err := tx.QueryRow(ctx, `SELECT token_hash FROM users WHERE id = ?`, []any{u.ID}, &stored); err != nil {
		return fmt.Errorf("relayseed: population %q is marked as seeded but user %d cannot be read (%v); Remove it and apply again", pop.Spec.Name, u.ID, err)
	}
	if stored != schema.TokenHash(pop.Token(u.ID)) {
		return fmt.Errorf("relayseed: population %q was seeded with this spec but another secret, so this secret's tokens would get 401; use the secret it was seeded with, or Remove it and apply again", pop.Spec.Name)
	}
	return nil
}

// checkFree reports rows, not accounted for by a marker, in the ids the
// population needs.
func checkFree(ctx context.Context, tx *seed.Tx, pop *Population) error {
	users := int64(len(pop.Users))
	var n int64
	err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM workspaces WHERE id BETWEEN 1 AND ?) + (SELECT count(*) FROM users WHERE id BETWEEN 1 AND ?) + (SELECT count(*) FROM connectors WHERE id BETWEEN 1 AND ?)`,
		[]any{int64(len(pop.Workspaces)), users, users * int64(pop.Spec.ConnectorsPerUser)}, &n)
	if err != nil {
		return fmt.Errorf("relayseed: check that the population's ids are free: %w", err)
	}
	if n > 0 {
		return fmt.Errorf("relayseed: the database has %d workspaces, users or connectors with ids the population %q needs (from 1) but no seed_marker row; seed into a fresh database or delete those rows", n, pop.Spec.Name)
	}
	return nil
}
