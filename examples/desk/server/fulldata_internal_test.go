package server

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/headroom-dev/headroom/examples/desk/deskseed"
	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/fixtures/localpg"
)

// TestFullDataSet seeds deskseed.Full (the seed's 200,000 cases and
// 1,000,000 messages) into a throwaway local PostgreSQL, logs the time it
// took and the database's size, and runs EXPLAIN ANALYZE on the queries
// of the inbox (three views), the sidebar counts (shared and per agent),
// the case page, search and the session lookup, failing when one scans
// the cases or messages table whole. It takes about 15 s of two cores and
// 0.7 GB of disk (measured: 15 s, 649 MB), so -short skips it, and so does
// DESK_FULL=0.
//
//	go test -run TestFullDataSet -v ./examples/desk/server/
func TestFullDataSet(t *testing.T) {
	if testing.Short() || os.Getenv("DESK_FULL") == "0" {
		t.Skip("seeds the full data set (about 15 s, 0.7 GB): skipped with -short or DESK_FULL=0")
	}
	c := localpg.StartT(t, localpg.Options{})
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	spec := deskseed.Full
	spec.Secret = []byte("full data set")
	start := time.Now()
	if _, err := deskseed.Apply(ctx, pool, spec, deskseed.WithLogf(t.Logf)); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	var size string
	var bytes int64
	if err := pool.QueryRow(ctx, `SELECT pg_database_size(current_database()), pg_size_pretty(pg_database_size(current_database()))`).Scan(&bytes, &size); err != nil {
		t.Fatal(err)
	}
	t.Logf("FULL: seeded %s in %v; database size %s (%d bytes)", spec.Name, took.Round(time.Second), size, bytes)
	rows, err := pool.Query(ctx, `SELECT c.relname, pg_size_pretty(pg_total_relation_size(c.oid)), pg_size_pretty(pg_relation_size(c.oid))
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY pg_total_relation_size(c.oid) DESC`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name, total, heap string
		if err := rows.Scan(&name, &total, &heap); err != nil {
			t.Fatal(err)
		}
		t.Logf("FULL: table %-15s total %8s, heap %8s", name, total, heap)
	}
	rows.Close()

	var busiest, unit, caseID int64
	if err := pool.QueryRow(ctx, `SELECT assignee_id, count(*) FROM cases WHERE `+schema.OpenPredicate+` AND assignee_id IS NOT NULL GROUP BY 1 ORDER BY 2 DESC LIMIT 1`).Scan(&busiest, new(int64)); err != nil {
		t.Fatal(err)
	}
	unit = spec.UnitOf(busiest)
	if err := pool.QueryRow(ctx, `SELECT id FROM cases WHERE unit_id = $1 ORDER BY message_count DESC LIMIT 1`, unit).Scan(&caseID); err != nil {
		t.Fatal(err)
	}
	var open, unassigned, mine int64
	pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE assignee_id IS NULL), count(*) FILTER (WHERE assignee_id = $2) FROM cases WHERE unit_id = $1 AND `+schema.OpenPredicate, unit, busiest).Scan(&open, &unassigned, &mine)
	t.Logf("FULL: agent %d of unit %d: %d open cases in the unit, %d unassigned, %d assigned to the agent; all units: %d open of %d",
		busiest, unit, open, unassigned, mine, countOf(t, pool, `SELECT count(*) FROM cases WHERE `+schema.OpenPredicate), spec.Cases)

	hash := schema.TokenHash(deskseed.Token(spec.Secret, busiest))
	for _, q := range []struct {
		name string
		sql  string
		args []any
	}{
		{"session lookup", `SELECT a.id, a.unit_id, u.org_id, a.name FROM sessions s JOIN agents a ON a.id = s.agent_id JOIN units u ON u.id = a.unit_id
			WHERE s.token_hash = $1 AND s.expires_at > now() AND a.active`, []any{hash}},
		{"inbox mine p1", inboxQuery[schema.ViewMine], []any{busiest, 25, 0}},
		{"inbox unassigned p1", inboxQuery[schema.ViewUnassigned], []any{unit, 25, 0}},
		{"inbox open p1", inboxQuery[schema.ViewOpen], []any{unit, 25, 0}},
		{"inbox open p4", inboxQuery[schema.ViewOpen], []any{unit, 25, 75}},
		{"counts shared (unit)", countsQuery, []any{unit}},
		{"counts per agent", agentCountsQuery, []any{unit, busiest}},
		{"case page: case", `SELECT ` + caseColumns + ` FROM cases WHERE id = $1 AND unit_id = $2`, []any{caseID, unit}},
		{"case page: messages", `SELECT id, kind, agent_id, body, created_at FROM (
			SELECT m.id, m.kind, m.agent_id, m.body, m.created_at FROM messages m JOIN cases c ON c.id = m.case_id AND c.unit_id = $2
			WHERE m.case_id = $1 ORDER BY m.created_at DESC, m.id DESC LIMIT $3) x ORDER BY created_at, id`, []any{caseID, unit, maxMessages}},
		{"case page: canned replies", `SELECT id, title, body FROM canned_replies WHERE unit_id = $1 ORDER BY id`, []any{unit}},
		{"search common word", searchQuery, []any{unit, tsQuery("printer"), 25}},
		{"search two words", searchQuery, []any{unit, tsQuery("slow vpn"), 25}},
		{"search requester", searchQuery, []any{unit, tsQuery("lovelace ada"), 25}},
	} {
		var plan []string
		rows, err := pool.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) `+q.sql, q.args...)
		if err != nil {
			t.Fatalf("%s: %v", q.name, err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		text := strings.Join(plan, "\n")
		exec := regexp.MustCompile(`Execution Time: ([0-9.]+ ms)`).FindStringSubmatch(text)
		t.Logf("FULL: EXPLAIN %s: %s\n%s", q.name, exec[1], text)
		if regexp.MustCompile(`Seq Scan on (cases|messages)\b`).MatchString(text) {
			t.Errorf("%s scans a big table whole:\n%s", q.name, text)
		}
	}
}

func countOf(t *testing.T, pool *pgxpool.Pool, q string) int64 {
	var n int64
	if err := pool.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(fmt.Errorf("%s: %w", q, err))
	}
	return n
}
