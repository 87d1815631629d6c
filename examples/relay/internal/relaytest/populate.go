package relaytest

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

// User is a user to insert, with its workspace and connectors.
type User struct {
	ID, WorkspaceID int64
	// Token is the bearer token; users.token_hash gets schema.TokenHash(Token).
	Token      string
	Connectors []Connector
}

// Connector is one of a user's connectors.
type Connector struct {
	ID        int64
	Name, URL string
}

// DB opens the relay's database: a postgres:// URL, or else a SQLite file
// path. It is closed in t.Cleanup.
func DB(t testing.TB, dsn string) *DBHandle {
	t.Helper()
	h := &DBHandle{pg: strings.HasPrefix(dsn, "postgres")}
	var err error
	if h.pg {
		h.DB, err = sql.Open("pgx", dsn)
	} else {
		h.DB, err = sql.Open("sqlite", "file:"+dsn+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	}
	if err != nil {
		t.Fatalf("relaytest: open %s: %v", dsn, err)
	}
	t.Cleanup(func() { h.DB.Close() })
	return h
}

// DBHandle is a database/sql handle on the relay's database that knows its
// dialect's placeholders.
type DBHandle struct {
	*sql.DB
	pg bool
}

// Q rewrites ? placeholders to $n on PostgreSQL.
func (h *DBHandle) Q(q string) string {
	if !h.pg {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Time returns t as the dialect stores times (SQLite: Unix microseconds).
func (h *DBHandle) Time(t time.Time) any {
	if h.pg {
		return t
	}
	return t.UnixMicro()
}

// Insert adds the users, their workspaces (if missing) and connectors.
func (h *DBHandle) Insert(t testing.TB, users ...User) {
	t.Helper()
	ctx := context.Background()
	for _, u := range users {
		stmts := []struct {
			q    string
			args []any
		}{
			{`INSERT INTO workspaces (id, name) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`, []any{u.WorkspaceID, fmt.Sprintf("workspace %d", u.WorkspaceID)}},
			{`INSERT INTO users (id, workspace_id, name, token_hash) VALUES (?, ?, ?, ?)`, []any{u.ID, u.WorkspaceID, fmt.Sprintf("user %d", u.ID), schema.TokenHash(u.Token)}},
		}
		for _, c := range u.Connectors {
			stmts = append(stmts, struct {
				q    string
				args []any
			}{`INSERT INTO connectors (id, user_id, name, upstream_url) VALUES (?, ?, ?, ?)`, []any{c.ID, u.ID, c.Name, c.URL}})
		}
		for _, s := range stmts {
			if _, err := h.ExecContext(ctx, h.Q(s.q), s.args...); err != nil {
				t.Fatalf("relaytest: %s: %v", s.q, err)
			}
		}
	}
}

// Usage is one usage row to insert.
type Usage struct {
	WorkspaceID, UserID, ConnectorID int64
	Tool                             string
	StartedAt                        time.Time
	Duration                         time.Duration
	Outcome                          string
	Bytes                            int64
}

// InsertUsage adds usage rows in one transaction.
func (h *DBHandle) InsertUsage(t testing.TB, rows []Usage) {
	t.Helper()
	tx, err := h.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	st, err := tx.Prepare(h.Q(`INSERT INTO usage (workspace_id, user_id, connector_id, tool, started_at, duration_us, outcome, bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, r := range rows {
		if _, err := st.Exec(r.WorkspaceID, r.UserID, r.ConnectorID, r.Tool, h.Time(r.StartedAt), r.Duration.Microseconds(), r.Outcome, r.Bytes); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
