package deskseed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/seed"
)

// Option configures Apply.
type Option func(*config)

type config struct {
	logf func(format string, args ...any)
}

// WithLogf reports progress (every few seconds during long loads) and a
// summary through logf, such as t.Logf or log.Printf. Lines never contain
// the secret or a password.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(c *config) { c.logf = logf }
}

func (c *config) log(format string, args ...any) {
	if c.logf != nil {
		c.logf(format, args...)
	}
}

// tablesOf are the desk's seeded tables, parents first.
var tablesOf = []string{"organizations", "units", "canned_replies", "agents", "sessions", "accounts", "contacts", "cases", "messages"}

// Apply writes the population spec describes into db (a *pgxpool.Pool or
// *pgx.Conn), migrating the schema first when it is missing.
//
// When db already holds this spec's population (seed_marker row with the
// same name and hash, and agent 1's session matches the secret) it writes
// nothing and returns the population with Applied false. Another
// population, or desk rows that no marker accounts for, is an error. Each
// table is one COPY in its own transaction; when a load fails part-way the
// seeded tables are emptied again (TRUNCATE), so a failed Apply leaves
// them empty. After the load the identity sequences are moved past the
// seeded ids and the tables analyzed, and the marker is written last.
func Apply(ctx context.Context, db seed.PgxDB, spec Spec, opts ...Option) (*Population, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	start := time.Now()
	pop := &Population{Spec: spec, Hash: spec.Hash()}
	if _, err := schema.Migrate(ctx, db); err != nil {
		return nil, err
	}
	var name, hash string
	err := db.QueryRow(ctx, `SELECT name, spec_hash FROM seed_marker ORDER BY name LIMIT 1`).Scan(&name, &hash)
	switch {
	case err == nil && name == spec.Name && hash == pop.Hash:
		if err := checkSecret(ctx, db, spec); err != nil {
			return nil, err
		}
		pop.Took = time.Since(start)
		c.log("deskseed: %s is already there; nothing written", pop)
		return pop, nil
	case err == nil && hash == "loading":
		return nil, fmt.Errorf("deskseed: population %q is being loaded by another seeder, or a seeder died part-way (seed_marker says %q); wait, or empty the desk tables and seed_marker", name, hash)
	case err == nil:
		return nil, fmt.Errorf("deskseed: the database holds population %q (spec hash %s), not this spec's %q (hash %s); use a fresh database, or empty the desk tables and seed_marker first",
			name, hash, spec.Name, pop.Hash)
	case !errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("deskseed: read seed_marker: %w", err)
	}
	for _, t := range tablesOf {
		var has bool
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t+`)`).Scan(&has); err != nil {
			return nil, fmt.Errorf("deskseed: inspect %s: %w", t, err)
		}
		if has {
			return nil, fmt.Errorf("deskseed: table %s already has rows that no seed_marker accounts for; use a fresh database", t)
		}
	}
	// The marker says "loading" while the tables fill: a second seeder
	// stops at the primary key instead of loading the same rows again.
	if _, err := db.Exec(ctx, `INSERT INTO seed_marker (name, spec_hash) VALUES ($1, 'loading')`, spec.Name); err != nil {
		return nil, fmt.Errorf("deskseed: claim seed_marker for %q (another seeder may be at work): %w", spec.Name, err)
	}
	if err := load(ctx, db, spec, &c); err != nil {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, terr := db.Exec(cctx, `TRUNCATE organizations, units, canned_replies, agents, sessions, accounts, contacts, cases, messages, seed_marker RESTART IDENTITY`); terr != nil {
			return nil, fmt.Errorf("%w; emptying the tables again failed too: %v", err, terr)
		}
		return nil, fmt.Errorf("%w; the desk tables were emptied again", err)
	}
	if _, err := db.Exec(ctx, `UPDATE seed_marker SET spec_hash = $2, applied_at = now() WHERE name = $1`, spec.Name, pop.Hash); err != nil {
		return nil, fmt.Errorf("deskseed: write seed_marker: %w", err)
	}
	pop.Applied, pop.Took = true, time.Since(start)
	c.log("deskseed: wrote %s in %v", pop, pop.Took.Round(time.Millisecond))
	return pop, nil
}

func load(ctx context.Context, db seed.PgxDB, spec Spec, c *config) error {
	target := seed.Postgres(db)
	for _, t := range spec.tables() {
		n, err := seed.Copy(ctx, target, t.name, t.columns, t.rows, seed.WithLogf(c.logf), seed.WithExpectedRows(t.n))
		if err == nil && n != t.n {
			err = fmt.Errorf("wrote %d rows, expected %d", n, t.n)
		}
		if err != nil {
			return fmt.Errorf("deskseed: apply %q: table %s: %w", spec.Name, t.name, err)
		}
	}
	for _, t := range []string{"cases", "messages"} {
		if _, err := db.Exec(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'id'), (SELECT max(id) FROM `+t+`))`); err != nil {
			return fmt.Errorf("deskseed: move the %s id sequence past the seeded ids: %w", t, err)
		}
	}
	c.log("deskseed: analyzing the seeded tables")
	if _, err := db.Exec(ctx, `ANALYZE organizations, units, canned_replies, agents, sessions, accounts, contacts, cases, messages`); err != nil {
		return fmt.Errorf("deskseed: analyze: %w", err)
	}
	return nil
}

// checkSecret reports a population seeded with another secret: agent 1's
// session must be the one this spec's secret derives.
func checkSecret(ctx context.Context, db seed.PgxDB, spec Spec) error {
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE agent_id = 1 AND token_hash = $1)`,
		schema.TokenHash(Token(spec.Secret, 1))).Scan(&ok)
	if err != nil {
		return fmt.Errorf("deskseed: check the sessions: %w", err)
	}
	if !ok {
		return fmt.Errorf("deskseed: population %q is there but was seeded with a different secret: its tokens would not sign in; seed a fresh database", spec.Name)
	}
	return nil
}
