package deskseed_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/deskseed"
	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/fixtures/localpg"
)

var pg localpg.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

func open(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pg.Database(t))
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

func short() deskseed.Spec {
	s := deskseed.Short
	s.Secret = []byte("test secret")
	return s
}

// digest is a hash of every row of the seeded tables, in id order.
func digest(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	h := sha256.New()
	for _, q := range []string{
		`SELECT id, name, email_from, brand_color FROM units ORDER BY id`,
		`SELECT id, unit_id, title, body FROM canned_replies ORDER BY id`,
		`SELECT a.id, a.unit_id, a.name, s.token_hash FROM agents a JOIN sessions s ON s.agent_id = a.id ORDER BY a.id`,
		`SELECT id, account_id, name, email FROM contacts ORDER BY id`,
		`SELECT id, unit_id, subject, status, priority, contact_id, requester_email, coalesce(assignee_id, 0), created_at, last_activity_at, message_count FROM cases ORDER BY id`,
		`SELECT id, case_id, kind, coalesce(agent_id, 0), body, created_at FROM messages ORDER BY id`,
	} {
		rows, err := pool.Query(context.Background(), q)
		require.NoError(t, err)
		for rows.Next() {
			v, err := rows.Values()
			require.NoError(t, err)
			fmt.Fprintln(h, v...)
		}
		require.NoError(t, rows.Err())
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestApplyShort seeds Short and checks the counts, the shape of the data
// (statuses, assignment, coherent cases and messages), the tokens, the
// idempotence and the determinism (a second database gets identical rows).
func TestApplyShort(t *testing.T) {
	ctx := context.Background()
	spec := short()
	pool := open(t)
	pop, err := deskseed.Apply(ctx, pool, spec, deskseed.WithLogf(t.Logf))
	require.NoError(t, err)
	require.True(t, pop.Applied)
	assert.NotContains(t, pop.String(), "test secret")

	count := func(q string, args ...any) int64 {
		var n int64
		require.NoError(t, pool.QueryRow(ctx, q, args...).Scan(&n), q)
		return n
	}
	for table, want := range map[string]int{
		"organizations": 1, "units": spec.Units, "canned_replies": spec.Units * spec.CannedPerUnit,
		"agents": spec.Agents, "sessions": spec.Agents, "accounts": spec.Accounts, "contacts": spec.Contacts,
		"cases": spec.Cases, "messages": spec.Messages,
	} {
		assert.Equal(t, int64(want), count(`SELECT count(*) FROM `+table), table)
	}
	// Every status occurs, open cases are a minority, some are unassigned.
	for _, st := range schema.Statuses {
		assert.Positive(t, count(`SELECT count(*) FROM cases WHERE status = $1`, st), st)
	}
	openCases := count(`SELECT count(*) FROM cases WHERE ` + schema.OpenPredicate)
	assert.Less(t, openCases, int64(spec.Cases/2))
	assert.Positive(t, count(`SELECT count(*) FROM cases WHERE `+schema.OpenPredicate+` AND assignee_id IS NULL`))
	// A case agrees with its messages: count, last activity, first is the requester's.
	assert.Zero(t, count(`SELECT count(*) FROM cases c JOIN (SELECT case_id, count(*) n, max(created_at) last, min(created_at) first FROM messages GROUP BY case_id) m ON m.case_id = c.id
		WHERE m.n <> c.message_count OR m.last <> c.last_activity_at OR m.first <> c.created_at`))
	assert.Zero(t, count(`SELECT count(*) FROM cases c WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.case_id = c.id)`))
	assert.Zero(t, count(`SELECT count(*) FROM messages m JOIN cases c ON c.id = m.case_id WHERE m.created_at = c.created_at AND m.kind <> 'requester'`))
	// Assignees and authors belong to the case's unit.
	assert.Zero(t, count(`SELECT count(*) FROM cases c JOIN agents a ON a.id = c.assignee_id WHERE a.unit_id <> c.unit_id`))
	assert.Zero(t, count(`SELECT count(*) FROM messages m JOIN cases c ON c.id = m.case_id JOIN agents a ON a.id = m.agent_id WHERE a.unit_id <> c.unit_id`))
	assert.Positive(t, count(`SELECT count(*) FROM messages WHERE kind = 'note'`))
	assert.Positive(t, count(`SELECT count(*) FROM messages WHERE kind = 'reply'`))
	// Cases span the two years before End.
	var first, last time.Time
	require.NoError(t, pool.QueryRow(ctx, `SELECT min(created_at), max(last_activity_at) FROM cases`).Scan(&first, &last))
	assert.WithinDuration(t, deskseed.DefaultEnd.Add(-spec.Span), first, 30*24*time.Hour)
	assert.False(t, last.After(deskseed.DefaultEnd))
	// Agent 7's token signs in as agent 7 of its unit.
	var agent, unit int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT a.id, a.unit_id FROM sessions s JOIN agents a ON a.id = s.agent_id WHERE s.token_hash = $1`,
		schema.TokenHash(pop.Token(7))).Scan(&agent, &unit))
	assert.Equal(t, int64(7), agent)
	assert.Equal(t, spec.UnitOf(7), unit)
	assert.True(t, strings.HasPrefix(pop.Token(7), deskseed.TokenPrefix))
	// New rows get ids past the seeded ones.
	var id int64
	require.NoError(t, pool.QueryRow(ctx, `INSERT INTO messages (case_id, kind, body, created_at) VALUES (1, 'note', 'x', now()) RETURNING id`).Scan(&id))
	assert.Equal(t, int64(spec.Messages+1), id)
	_, err = pool.Exec(ctx, `DELETE FROM messages WHERE id = $1`, id)
	require.NoError(t, err)

	// Again: nothing written.
	again, err := deskseed.Apply(ctx, pool, spec)
	require.NoError(t, err)
	assert.False(t, again.Applied)
	// Another secret, another spec: refused.
	other := spec
	other.Secret = []byte("another")
	_, err = deskseed.Apply(ctx, pool, other)
	require.ErrorContains(t, err, "different secret")
	other = spec
	other.Cases++
	_, err = deskseed.Apply(ctx, pool, other)
	require.ErrorContains(t, err, "holds population")

	// Determinism: a second database gets the same rows.
	pool2 := open(t)
	_, err = deskseed.Apply(ctx, pool2, spec)
	require.NoError(t, err)
	assert.Equal(t, digest(t, pool), digest(t, pool2))
}

// TestSpecValidate names each bad field.
func TestSpecValidate(t *testing.T) {
	err := deskseed.Spec{Units: 5, Agents: 2, Cases: 10, Messages: 3}.Validate()
	require.Error(t, err)
	for _, want := range []string{"Name", "CannedPerUnit", "Accounts", "Contacts", "Agents=2 is below Spec.Units=5", "Messages=3", "Span", "Secret"} {
		assert.ErrorContains(t, err, want)
	}
	assert.NoError(t, short().Validate())
	assert.NotEqual(t, deskseed.Full.Hash(), deskseed.Short.Hash())
}

// TestAgentsOf checks that units' agent counts add up to Agents.
func TestAgentsOf(t *testing.T) {
	for _, s := range []deskseed.Spec{deskseed.Full, deskseed.Short, {Units: 7, Agents: 23}} {
		total := 0
		for u := int64(1); u <= int64(s.Units); u++ {
			total += s.AgentsOf(u)
		}
		assert.Equal(t, s.Agents, total)
		assert.Equal(t, int64(1), s.UnitOf(int64(s.Units)+1))
	}
}
