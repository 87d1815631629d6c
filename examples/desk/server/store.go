package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/headroom-dev/headroom/examples/desk/schema"
)

// errNotFound is a case that does not exist or that the agent's unit does
// not hold (the desk does not tell them apart).
var errNotFound = errors.New("no such case in your unit")

// openPool connects the pool and applies the migrations. Under a
// transaction pooler (cfg.Pooler) queries use the simple protocol: no
// statement is prepared on a server connection that the next transaction
// may not get.
func openPool(ctx context.Context, cfg Config) (*pgxpool.Pool, int, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, 0, fmt.Errorf("desk: DATABASE_URL: %w", err)
	}
	pc.MaxConns = int32(cfg.DBMaxConns)
	nameConnections(pc.ConnConfig, "desk-"+cfg.Role)
	if cfg.Pooler {
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		pc.ConnConfig.StatementCacheCapacity = 0
		pc.ConnConfig.DescriptionCacheCapacity = 0
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, 0, fmt.Errorf("desk: connect to the database: %w", err)
	}
	version, err := schema.Migrate(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, 0, err
	}
	return pool, version, nil
}

// nameConnections sets the connections' application_name, unless the URL
// gave one, so that pg_stat_activity counts connections per kind of
// process: desk-all, desk-web, desk-worker, and desk-<role>-listen for
// the LISTEN connection.
func nameConnections(cc *pgx.ConnConfig, name string) {
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = name
	}
}

// principal is a signed-in agent and what it may see: its unit's cases.
type principal struct {
	AgentID int64  `json:"agent_id"`
	UnitID  int64  `json:"unit_id"`
	OrgID   int64  `json:"org_id"`
	Name    string `json:"name"`
}

func lookupSession(ctx context.Context, db *pgxpool.Pool, tokenHash string) (principal, bool, error) {
	var p principal
	err := db.QueryRow(ctx, `SELECT a.id, a.unit_id, u.org_id, a.name
		FROM sessions s JOIN agents a ON a.id = s.agent_id JOIN units u ON u.id = a.unit_id
		WHERE s.token_hash = $1 AND s.expires_at > now() AND a.active`, tokenHash).Scan(&p.AgentID, &p.UnitID, &p.OrgID, &p.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false, nil
	}
	return p, err == nil, err
}

// caseRow is a case as the inbox lists it.
type caseRow struct {
	ID             int64     `json:"id"`
	UnitID         int64     `json:"unit_id"`
	Subject        string    `json:"subject"`
	Status         string    `json:"status"`
	Priority       int16     `json:"priority"`
	RequesterName  string    `json:"requester_name"`
	RequesterEmail string    `json:"requester_email"`
	AssigneeID     *int64    `json:"assignee_id"`
	CreatedAt      time.Time `json:"created_at"`
	LastActivityAt time.Time `json:"last_activity_at"`
	MessageCount   int32     `json:"message_count"`
}

const caseColumns = `id, unit_id, subject, status, priority, requester_name, requester_email, assignee_id, created_at, last_activity_at, message_count`

func scanCases(rows pgx.Rows) ([]caseRow, error) {
	out := []caseRow{}
	for rows.Next() {
		var c caseRow
		if err := rows.Scan(&c.ID, &c.UnitID, &c.Subject, &c.Status, &c.Priority, &c.RequesterName, &c.RequesterEmail,
			&c.AssigneeID, &c.CreatedAt, &c.LastActivityAt, &c.MessageCount); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// inboxQuery is the SQL of each view's page: $1 the unit (the agent for
// ViewMine), $2 the limit, $3 the offset. Each matches a partial index's
// predicate and order.
var inboxQuery = map[string]string{
	schema.ViewMine: `SELECT ` + caseColumns + ` FROM cases WHERE assignee_id = $1 AND ` + schema.OpenPredicate +
		` ORDER BY last_activity_at DESC, id DESC LIMIT $2 OFFSET $3`,
	schema.ViewUnassigned: `SELECT ` + caseColumns + ` FROM cases WHERE unit_id = $1 AND ` + schema.OpenPredicate +
		` AND assignee_id IS NULL ORDER BY last_activity_at DESC, id DESC LIMIT $2 OFFSET $3`,
	schema.ViewOpen: `SELECT ` + caseColumns + ` FROM cases WHERE unit_id = $1 AND ` + schema.OpenPredicate +
		` ORDER BY last_activity_at DESC, id DESC LIMIT $2 OFFSET $3`,
}

func listInbox(ctx context.Context, db *pgxpool.Pool, p principal, view string, limit, offset int) ([]caseRow, error) {
	key := p.UnitID
	if view == schema.ViewMine {
		key = p.AgentID
	}
	rows, err := db.Query(ctx, inboxQuery[view], key, limit, offset)
	if err != nil {
		return nil, err
	}
	return scanCases(rows)
}

// unitCounts are a unit's open cases counted by status and assignee: the
// shared computation behind every agent's sidebar.
type unitCounts struct {
	open       int64
	unassigned int64
	byStatus   map[string]int64
	byAssignee map[int64]int64
}

// countsQuery is the shared count of a unit: one row per status and
// assignee (NULL: unassigned).
const countsQuery = `SELECT status, assignee_id, count(*) FROM cases WHERE unit_id = $1 AND ` + schema.OpenPredicate + ` GROUP BY status, assignee_id`

func countUnit(ctx context.Context, db *pgxpool.Pool, unit int64) (*unitCounts, error) {
	rows, err := db.Query(ctx, countsQuery, unit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	c := &unitCounts{byStatus: map[string]int64{}, byAssignee: map[int64]int64{}}
	for rows.Next() {
		var status string
		var assignee *int64
		var n int64
		if err := rows.Scan(&status, &assignee, &n); err != nil {
			return nil, err
		}
		c.open += n
		c.byStatus[status] += n
		if assignee == nil {
			c.unassigned += n
		} else {
			c.byAssignee[*assignee] += n
		}
	}
	return c, rows.Err()
}

// agentCountsQuery is one agent's sidebar, counted for it alone (shared
// counts off).
const agentCountsQuery = `SELECT count(*) FILTER (WHERE assignee_id = $2), count(*) FILTER (WHERE assignee_id IS NULL), count(*),
	count(*) FILTER (WHERE status = 'new'), count(*) FILTER (WHERE status = 'open'),
	count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'on_hold')
	FROM cases WHERE unit_id = $1 AND ` + schema.OpenPredicate

// counts is an agent's sidebar: the size of each view and the open cases
// by status.
type counts struct {
	Mine       int64            `json:"mine"`
	Unassigned int64            `json:"unassigned"`
	Open       int64            `json:"open"`
	ByStatus   map[string]int64 `json:"by_status"`
}

func (u *unitCounts) forAgent(agent int64) counts {
	c := counts{Mine: u.byAssignee[agent], Unassigned: u.unassigned, Open: u.open, ByStatus: make(map[string]int64, len(schema.OpenStatuses))}
	for _, s := range schema.OpenStatuses {
		c.ByStatus[s] = u.byStatus[s]
	}
	return c
}

func countAgent(ctx context.Context, db *pgxpool.Pool, p principal) (counts, error) {
	var c counts
	var st [4]int64
	err := db.QueryRow(ctx, agentCountsQuery, p.UnitID, p.AgentID).Scan(&c.Mine, &c.Unassigned, &c.Open, &st[0], &st[1], &st[2], &st[3])
	c.ByStatus = make(map[string]int64, 4)
	for i, s := range schema.OpenStatuses {
		c.ByStatus[s] = st[i]
	}
	return c, err
}

// message is one message of a case's conversation.
type message struct {
	ID        int64     `json:"id"`
	Kind      string    `json:"kind"`
	AgentID   *int64    `json:"agent_id"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// unit is a unit's branding.
type unit struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	EmailFrom  string `json:"email_from"`
	BrandColor string `json:"brand_color"`
	LogoURL    string `json:"logo_url"`
	Signature  string `json:"signature"`
}

type cannedReply struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

// viewer is an agent seen on a case within the presence TTL.
type viewer struct {
	AgentID int64     `json:"agent_id"`
	Name    string    `json:"name"`
	SeenAt  time.Time `json:"seen_at"`
}

// casePage is everything the case page shows.
type casePage struct {
	Case          caseRow       `json:"case"`
	Messages      []message     `json:"messages"`
	Unit          unit          `json:"unit"`
	CannedReplies []cannedReply `json:"canned_replies"`
	Viewers       []viewer      `json:"viewers"`
}

// maxMessages bounds the conversation a case page shows (the newest).
const maxMessages = 500

// loadCasePage reads a case of p's unit with its conversation, the unit's
// branding, canned replies and current viewers in one round trip.
func loadCasePage(ctx context.Context, db *pgxpool.Pool, p principal, id int64, presenceTTL time.Duration) (*casePage, error) {
	var page casePage
	b := &pgx.Batch{}
	b.Queue(`SELECT `+caseColumns+` FROM cases WHERE id = $1 AND unit_id = $2`, id, p.UnitID)
	b.Queue(`SELECT id, kind, agent_id, body, created_at FROM (
		SELECT m.id, m.kind, m.agent_id, m.body, m.created_at FROM messages m JOIN cases c ON c.id = m.case_id AND c.unit_id = $2
		WHERE m.case_id = $1 ORDER BY m.created_at DESC, m.id DESC LIMIT $3) x ORDER BY created_at, id`, id, p.UnitID, maxMessages)
	b.Queue(`SELECT id, name, email_from, brand_color, logo_url, signature FROM units WHERE id = $1`, p.UnitID)
	b.Queue(`SELECT id, title, body FROM canned_replies WHERE unit_id = $1 ORDER BY id`, p.UnitID)
	b.Queue(`SELECT pr.agent_id, a.name, pr.seen_at FROM presence pr JOIN agents a ON a.id = pr.agent_id
		WHERE pr.case_id = $1 AND pr.seen_at > now() - $2 * interval '1 microsecond' ORDER BY pr.agent_id`, id, presenceTTL.Microseconds())
	res := db.SendBatch(ctx, b)
	defer res.Close()
	rows, _ := res.Query()
	cases, err := scanCases(rows)
	if err != nil {
		return nil, err
	}
	if len(cases) == 0 {
		return nil, errNotFound
	}
	page.Case = cases[0]
	rows, _ = res.Query()
	page.Messages, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (message, error) {
		var m message
		return m, r.Scan(&m.ID, &m.Kind, &m.AgentID, &m.Body, &m.CreatedAt)
	})
	if err != nil {
		return nil, err
	}
	u := &page.Unit
	if err := res.QueryRow().Scan(&u.ID, &u.Name, &u.EmailFrom, &u.BrandColor, &u.LogoURL, &u.Signature); err != nil {
		return nil, err
	}
	rows, _ = res.Query()
	page.CannedReplies, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (cannedReply, error) {
		var c cannedReply
		return c, r.Scan(&c.ID, &c.Title, &c.Body)
	})
	if err != nil {
		return nil, err
	}
	rows, _ = res.Query()
	page.Viewers, err = collectViewers(rows)
	return &page, err
}

func collectViewers(rows pgx.Rows) ([]viewer, error) {
	v, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (viewer, error) {
		var v viewer
		return v, r.Scan(&v.AgentID, &v.Name, &v.SeenAt)
	})
	if v == nil {
		v = []viewer{}
	}
	return v, err
}

// change is what a write tells every desk process over NOTIFY.
type change struct {
	// T is "case" (a case of Unit changed) or "outbox" (mail to send).
	T        string `json:"t"`
	Unit     int64  `json:"unit,omitempty"`
	Case     int64  `json:"case,omitempty"`
	Kind     string `json:"kind,omitempty"`
	Assignee *int64 `json:"assignee,omitempty"`
	Status   string `json:"status,omitempty"`
	// WrittenAt is when the change was written: PostgreSQL's
	// clock_timestamp() as the NOTIFY is sent, in RFC 3339 (the streams
	// carry it, so that a client measures how long a change took to
	// reach it).
	WrittenAt string `json:"written_at,omitempty"`
}

// notify announces c in tx's transaction, stamped with the time it was
// written (clock_timestamp(), not the transaction's start).
func notify(ctx context.Context, tx pgx.Tx, c change) error {
	b, _ := json.Marshal(c)
	_, err := tx.Exec(ctx, `SELECT pg_notify($1, ($2::jsonb || jsonb_build_object('written_at', clock_timestamp()))::text)`, schema.NotifyChannel, string(b))
	return err
}

// writeMessage adds an agent's note or reply to a case of its unit, in one
// transaction: the message, the case's activity (a reply to a new or open
// case sets it pending), for a reply the outbox row, and the NOTIFY.
func writeMessage(ctx context.Context, db *pgxpool.Pool, p principal, id int64, kind, body string) (message, error) {
	m := message{Kind: kind, AgentID: &p.AgentID, Body: body}
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		var c caseRow
		var email, subject, signature, from string
		err := tx.QueryRow(ctx, `UPDATE cases c SET last_activity_at = clock_timestamp(), message_count = message_count + 1,
				status = CASE WHEN $3 = 'reply' AND status IN ('new', 'open') THEN 'pending' ELSE status END
			FROM units u WHERE c.id = $1 AND c.unit_id = $2 AND u.id = c.unit_id
			RETURNING c.status, c.assignee_id, c.requester_email, c.subject, u.signature, u.email_from, c.last_activity_at`,
			id, p.UnitID, kind).Scan(&c.Status, &c.AssigneeID, &email, &subject, &signature, &from, &m.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO messages (case_id, kind, agent_id, body, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id`,
			id, kind, p.AgentID, body, m.CreatedAt).Scan(&m.ID); err != nil {
			return err
		}
		if kind == schema.KindReply {
			if _, err := tx.Exec(ctx, `INSERT INTO outbox (case_id, message_id, to_email, from_email, subject, body) VALUES ($1, $2, $3, $4, $5, $6)`,
				id, m.ID, email, from, fmt.Sprintf("Re: %s [#%d]", subject, id), body+"\n\n"+signature); err != nil {
				return err
			}
			if err := notify(ctx, tx, change{T: "outbox"}); err != nil {
				return err
			}
		}
		return notify(ctx, tx, change{T: "case", Unit: p.UnitID, Case: id, Kind: kind, Assignee: c.AssigneeID, Status: c.Status})
	})
	return m, err
}

// searchQuery finds a unit's cases whose subject or requester matches a
// full-text query, newest activity first.
const searchQuery = `SELECT ` + caseColumns + ` FROM cases WHERE unit_id = $1 AND search @@ to_tsquery('simple', $2)
	ORDER BY last_activity_at DESC, id DESC LIMIT $3`

func searchCases(ctx context.Context, db *pgxpool.Pool, p principal, tsquery string, limit int) ([]caseRow, error) {
	rows, err := db.Query(ctx, searchQuery, p.UnitID, tsquery, limit)
	if err != nil {
		return nil, err
	}
	return scanCases(rows)
}

// heartbeat records that p views case id (of its unit) and returns the
// other agents viewing it within ttl.
func heartbeat(ctx context.Context, db *pgxpool.Pool, p principal, id int64, ttl time.Duration) ([]viewer, error) {
	tag, err := db.Exec(ctx, `INSERT INTO presence (case_id, agent_id, seen_at)
		SELECT id, $2, now() FROM cases WHERE id = $1 AND unit_id = $3
		ON CONFLICT (case_id, agent_id) DO UPDATE SET seen_at = excluded.seen_at`, id, p.AgentID, p.UnitID)
	if err != nil {
		return nil, err
	}
	if tag.RowsAffected() == 0 {
		return nil, errNotFound
	}
	rows, err := db.Query(ctx, `SELECT pr.agent_id, a.name, pr.seen_at FROM presence pr JOIN agents a ON a.id = pr.agent_id
		WHERE pr.case_id = $1 AND pr.agent_id <> $2 AND pr.seen_at > now() - $3 * interval '1 microsecond' ORDER BY pr.agent_id`, id, p.AgentID, ttl.Microseconds())
	if err != nil {
		return nil, err
	}
	return collectViewers(rows)
}

// leave forgets that p views case id.
func leave(ctx context.Context, db *pgxpool.Pool, p principal, id int64) error {
	_, err := db.Exec(ctx, `DELETE FROM presence WHERE case_id = $1 AND agent_id = $2`, id, p.AgentID)
	return err
}
