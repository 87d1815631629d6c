// Package schema is the desk's PostgreSQL schema, shared by the desk (which
// applies it at start) and by package deskseed (which fills it). It holds
// the migrations, the case statuses and views, and the session token hash.
//
// Conventions:
//   - ids are 64-bit integers; cases, messages and outbox ids are assigned
//     by the database when not given (deskseed gives them and moves the
//     sequences past the seeded ids);
//   - times are TIMESTAMPTZ;
//   - cases.status is one of the Status* constants; a case is open when its
//     status is one of OpenStatuses;
//   - messages.kind is one of the Kind* constants;
//   - sessions.token_hash is [TokenHash] of an agent's bearer token: the
//     desk never stores a token;
//   - the high-volume tables (cases, messages, outbox) have no foreign keys,
//     so bulk loads and inserts on the request path stay cheap.
package schema

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// Case statuses, as stored in cases.status.
const (
	StatusNew     = "new"     // arrived, nobody has answered
	StatusOpen    = "open"    // an agent works on it
	StatusPending = "pending" // waiting for the requester
	StatusOnHold  = "on_hold" // waiting for a third party
	StatusSolved  = "solved"  // answered; reopens if the requester writes
	StatusClosed  = "closed"  // done for good
)

// OpenStatuses are the statuses of an open case, in sidebar order: the
// ones the inbox views list and the sidebar counts.
var OpenStatuses = []string{StatusNew, StatusOpen, StatusPending, StatusOnHold}

// Statuses are every status, open ones first.
var Statuses = []string{StatusNew, StatusOpen, StatusPending, StatusOnHold, StatusSolved, StatusClosed}

// openSQL is the SQL list of OpenStatuses, for the partial indexes; it
// must match OpenStatuses.
const openSQL = `('new','open','pending','on_hold')`

// OpenPredicate is the SQL condition on cases.status of an open case, the
// same as the partial indexes' predicate so that the planner uses them.
const OpenPredicate = `status IN ` + openSQL

// Message kinds, as stored in messages.kind.
const (
	KindRequester = "requester" // written by the requester (incoming email, portal)
	KindReply     = "reply"     // an agent's email reply, sent to the requester
	KindNote      = "note"      // an agent's internal note, never sent
)

// Inbox views, the values of the inbox's view parameter.
const (
	ViewMine       = "mine"       // open cases assigned to the agent
	ViewUnassigned = "unassigned" // open cases of the agent's unit nobody has
	ViewOpen       = "open"       // every open case of the agent's unit
)

// Views are the inbox views.
var Views = []string{ViewMine, ViewUnassigned, ViewOpen}

// NotifyChannel is the LISTEN/NOTIFY channel on which writers announce
// changes (cases, outbox) to every desk process.
const NotifyChannel = "desk_changes"

// TokenHash returns the hex SHA-256 of a bearer token, the form in which
// sessions.token_hash stores it.
func TokenHash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Migration is one numbered step of the schema.
type Migration = kit.Migration

// Migrations are the schema's steps in order. Statements are idempotent
// (IF NOT EXISTS).
var Migrations = []Migration{{
	Version: 1,
	Statements: []string{
		`CREATE TABLE IF NOT EXISTS organizations (
			id   BIGINT PRIMARY KEY,
			name TEXT NOT NULL)`,
		// A unit is a team with its own queue, branding and canned replies.
		`CREATE TABLE IF NOT EXISTS units (
			id          BIGINT PRIMARY KEY,
			org_id      BIGINT NOT NULL REFERENCES organizations(id),
			name        TEXT NOT NULL,
			email_from  TEXT NOT NULL,
			brand_color TEXT NOT NULL,
			logo_url    TEXT NOT NULL,
			signature   TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS canned_replies (
			id      BIGINT PRIMARY KEY,
			unit_id BIGINT NOT NULL REFERENCES units(id),
			title   TEXT NOT NULL,
			body    TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS canned_replies_unit ON canned_replies (unit_id, id)`,
		`CREATE TABLE IF NOT EXISTS agents (
			id      BIGINT PRIMARY KEY,
			unit_id BIGINT NOT NULL REFERENCES units(id),
			name    TEXT NOT NULL,
			email   TEXT NOT NULL,
			role    TEXT NOT NULL DEFAULT 'agent',
			active  BOOLEAN NOT NULL DEFAULT true)`,
		`CREATE INDEX IF NOT EXISTS agents_unit ON agents (unit_id)`,
		// One signed-in session per agent; the bearer token's hash.
		`CREATE TABLE IF NOT EXISTS sessions (
			token_hash TEXT PRIMARY KEY,
			agent_id   BIGINT NOT NULL REFERENCES agents(id),
			expires_at TIMESTAMPTZ NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS accounts (
			id     BIGINT PRIMARY KEY,
			name   TEXT NOT NULL,
			domain TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS contacts (
			id         BIGINT PRIMARY KEY,
			account_id BIGINT NOT NULL,
			name       TEXT NOT NULL,
			email      TEXT NOT NULL)`,
		// The requester's name and email are copied onto the case so that
		// search covers them with one generated column and one index.
		`CREATE TABLE IF NOT EXISTS cases (
			id               BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
			unit_id          BIGINT NOT NULL,
			subject          TEXT NOT NULL,
			status           TEXT NOT NULL,
			priority         SMALLINT NOT NULL,
			contact_id       BIGINT NOT NULL,
			account_id       BIGINT NOT NULL,
			requester_name   TEXT NOT NULL,
			requester_email  TEXT NOT NULL,
			assignee_id      BIGINT,
			created_at       TIMESTAMPTZ NOT NULL,
			last_activity_at TIMESTAMPTZ NOT NULL,
			message_count    INTEGER NOT NULL DEFAULT 0,
			search           TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple',
				subject || ' ' || requester_name || ' ' || regexp_replace(requester_email, '[@.]', ' ', 'g'))) STORED)`,
		// The inbox's three views and the sidebar counts read only open
		// cases: partial indexes in the views' order (last activity first).
		`CREATE INDEX IF NOT EXISTS cases_open_unit ON cases (unit_id, last_activity_at DESC, id DESC) WHERE ` + OpenPredicate,
		`CREATE INDEX IF NOT EXISTS cases_open_unassigned ON cases (unit_id, last_activity_at DESC, id DESC) WHERE ` + OpenPredicate + ` AND assignee_id IS NULL`,
		`CREATE INDEX IF NOT EXISTS cases_open_assignee ON cases (assignee_id, last_activity_at DESC, id DESC) WHERE ` + OpenPredicate,
		`CREATE INDEX IF NOT EXISTS cases_search ON cases USING gin (search)`,
		`CREATE INDEX IF NOT EXISTS cases_unit_activity ON cases (unit_id, last_activity_at DESC, id DESC)`,
		`CREATE TABLE IF NOT EXISTS messages (
			id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
			case_id    BIGINT NOT NULL,
			kind       TEXT NOT NULL,
			agent_id   BIGINT,
			body       TEXT NOT NULL,
			created_at TIMESTAMPTZ NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS messages_case ON messages (case_id, created_at)`,
		// Outgoing email waits here for the worker, which sends it to the
		// mail stand-in (DESK_MAIL_URL) and stamps sent_at.
		`CREATE TABLE IF NOT EXISTS outbox (
			id         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
			case_id    BIGINT NOT NULL,
			message_id BIGINT NOT NULL,
			to_email   TEXT NOT NULL,
			from_email TEXT NOT NULL,
			subject    TEXT NOT NULL,
			body       TEXT NOT NULL,
			created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
			attempts   INTEGER NOT NULL DEFAULT 0,
			last_error TEXT NOT NULL DEFAULT '',
			sent_at    TIMESTAMPTZ)`,
		`CREATE INDEX IF NOT EXISTS outbox_unsent ON outbox (id) WHERE sent_at IS NULL`,
		// Who views which case; rows expire (DESK_PRESENCE_TTL). Unlogged:
		// presence is worthless after a crash and cheap to write.
		`CREATE UNLOGGED TABLE IF NOT EXISTS presence (
			case_id  BIGINT NOT NULL,
			agent_id BIGINT NOT NULL,
			seen_at  TIMESTAMPTZ NOT NULL,
			PRIMARY KEY (case_id, agent_id))`,
		`CREATE INDEX IF NOT EXISTS presence_seen ON presence (seen_at)`,
		`CREATE TABLE IF NOT EXISTS seed_marker (
			name       TEXT PRIMARY KEY,
			spec_hash  TEXT NOT NULL,
			applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`,
	},
}}

// Version is the newest migration's version.
func Version() int { return Migrations[len(Migrations)-1].Version }

// advisoryLockKey serializes migrations of one database ("desk" in ASCII).
const advisoryLockKey = 0x6465736b

// Migrate applies the migrations db lacks, each in one transaction under
// an advisory lock, so that several desk processes starting at once apply
// each step once. It returns the schema version.
func Migrate(ctx context.Context, db kit.Beginner) (int, error) {
	return kit.Migrate(ctx, db, "desk", advisoryLockKey, Migrations)
}
