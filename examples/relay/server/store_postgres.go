package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

// notifyChannel is the LISTEN/NOTIFY channel events travel on.
const notifyChannel = "relay_events"

// maxInlinePayload is the largest event payload in bytes carried inside the
// NOTIFY message (PostgreSQL's limit is 8000 bytes); a larger one is
// fetched by id.
const maxInlinePayload = 7000

// migrateLockID is the advisory lock key that serialises migrations when
// several replicas start at once.
const migrateLockID = 0x72656c6179 // "relay"

// pgStore keeps everything in PostgreSQL. Each call's usage and event rows
// are written, and the event announced with pg_notify, in one statement;
// a dedicated connection LISTENs and delivers every event, its own and
// other replicas', to this replica's subscriber.
type pgStore struct {
	pool    *pgxpool.Pool
	listen  *pgx.ConnConfig
	deliver func(event)
	log     *slog.Logger

	cancel    context.CancelFunc
	done      chan struct{}
	listening chan struct{} // closed once LISTEN is first in force
	lastID    atomic.Int64  // highest event id delivered, for catch-up after a reconnect

	mu       sync.Mutex
	barriers map[string]chan struct{}
}

// openPostgres connects, applies the migrations and starts listening; it
// returns once LISTEN is in force. noReconnect is the planted fault
// db-no-reconnect: the pool dials its maxConns connections once, and
// refuses to dial again.
func openPostgres(ctx context.Context, url string, maxConns int, noReconnect bool, deliver func(event), log *slog.Logger) (*pgStore, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("relay: DATABASE_URL: %w", err)
	}
	cfg.MaxConns = int32(maxConns)
	cfg.MinConns = int32(min(maxConns, 4))
	cfg.MaxConnIdleTime = 10 * time.Minute
	if noReconnect {
		var dialled atomic.Int32
		cfg.MinConns = cfg.MaxConns
		cfg.BeforeConnect = func(context.Context, *pgx.ConnConfig) error {
			if dialled.Add(1) > cfg.MaxConns {
				return errors.New("relay: the pool does not dial again (planted fault db-no-reconnect)")
			}
			return nil
		}
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("relay: DATABASE_URL: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("relay: connect to DATABASE_URL: %w", err)
	}
	if err := migratePostgres(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	s := &pgStore{
		pool: pool, listen: cfg.ConnConfig.Copy(), deliver: deliver, log: log,
		cancel: cancel, done: make(chan struct{}), listening: make(chan struct{}),
		barriers: map[string]chan struct{}{},
	}
	go s.listenLoop(lctx)
	select {
	case <-s.listening:
		return s, nil
	case <-ctx.Done():
		s.close()
		return nil, fmt.Errorf("relay: LISTEN %s: %w", notifyChannel, ctx.Err())
	}
}

// migratePostgres applies the missing migrations in one transaction under
// an advisory lock.
func migratePostgres(ctx context.Context, pool *pgxpool.Pool) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("relay: migrate: %w", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLockID)); err != nil {
		return fmt.Errorf("relay: migrate: %w", err)
	}
	if _, err := tx.Exec(ctx, schema.VersionTable); err != nil {
		return fmt.Errorf("relay: migrate: %w", err)
	}
	var v int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
		return fmt.Errorf("relay: migrate: %w", err)
	}
	for _, m := range schema.Migrations(schema.Postgres) {
		if m.Version <= v {
			continue
		}
		for _, st := range m.Statements {
			if _, err := tx.Exec(ctx, st); err != nil {
				return fmt.Errorf("relay: migrate PostgreSQL to version %d: %w in %s", m.Version, err, firstLine(st))
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_version (version) VALUES ($1)`, m.Version); err != nil {
			return fmt.Errorf("relay: migrate: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("relay: migrate: %w", err)
	}
	return nil
}

func (s *pgStore) dialect() string { return "postgres" }

func (s *pgStore) connections() (inUse, idle, most int) {
	st := s.pool.Stat()
	return int(st.AcquiredConns()), int(st.IdleConns()), int(st.MaxConns())
}

func (s *pgStore) authenticate(ctx context.Context, tokenHash string) (principal, bool, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT u.id, u.workspace_id, c.id, c.name, c.upstream_url
		FROM users u LEFT JOIN connectors c ON c.user_id = u.id
		WHERE u.token_hash = $1 ORDER BY c.id`, tokenHash)
	if err != nil {
		return principal{}, false, err
	}
	defer rows.Close()
	var p principal
	found := false
	for rows.Next() {
		var cid *int64
		var name, url *string
		if err := rows.Scan(&p.UserID, &p.WorkspaceID, &cid, &name, &url); err != nil {
			return principal{}, false, err
		}
		found = true
		if cid != nil {
			p.Connectors = append(p.Connectors, connector{ID: *cid, Name: *name, URL: *url})
		}
	}
	return p, found, rows.Err()
}

// pgRecord writes usage and event and announces the event, in one round
// trip. The NOTIFY goes out when the statement's transaction commits.
const pgRecord = `
	WITH u AS (
		INSERT INTO usage (workspace_id, user_id, connector_id, tool, started_at, duration_us, outcome, bytes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
	), e AS (
		INSERT INTO events (workspace_id, user_id, kind, payload) VALUES ($1, $2, 'call', $9)
		RETURNING id, created_at, (extract(epoch FROM created_at) * 1000000)::bigint AS us
	)
	SELECT id, created_at, pg_notify('` + notifyChannel + `',
		concat_ws(' ', $10::text, id, $1::bigint, $2::bigint, us, 'call', CASE WHEN $10 = 'e' THEN $9::text END))
	FROM e`

func (s *pgStore) recordCall(ctx context.Context, rec callRecord, payload string) (event, error) {
	mode := "e" // the event travels whole in the notification
	if len(payload) > maxInlinePayload {
		mode = "i" // only its id does; listeners fetch it
	}
	ev := event{WorkspaceID: rec.WorkspaceID, UserID: rec.UserID, Kind: "call", Payload: payload}
	err := s.pool.QueryRow(ctx, pgRecord,
		rec.WorkspaceID, rec.UserID, rec.ConnectorID, rec.Tool, rec.StartedAt,
		rec.Duration.Microseconds(), rec.Outcome, rec.Bytes, payload, mode).Scan(&ev.ID, &ev.WrittenAt, nil)
	ev.WrittenAt = ev.WrittenAt.UTC()
	return ev, err
}

func (s *pgStore) eventsAfter(ctx context.Context, workspaceID, userID, afterID int64, limit int) ([]event, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, workspace_id, user_id, kind, payload, created_at FROM events
		WHERE workspace_id = $1 AND id > $2 AND ($3 = 0 OR user_id = $3) ORDER BY id LIMIT $4`,
		workspaceID, afterID, userID, limit)
	if err != nil {
		return nil, err
	}
	return scanEvents(rows)
}

func scanEvents(rows pgx.Rows) ([]event, error) {
	defer rows.Close()
	var out []event
	for rows.Next() {
		var e event
		if err := rows.Scan(&e.ID, &e.WorkspaceID, &e.UserID, &e.Kind, &e.Payload, &e.WrittenAt); err != nil {
			return nil, err
		}
		e.WrittenAt = e.WrittenAt.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

const pgDashboard = `
	SELECT tool, count(*), count(*) FILTER (WHERE outcome <> 'ok'),
		percentile_cont(0.95) WITHIN GROUP (ORDER BY duration_us)
	FROM usage
	WHERE workspace_id = $1 AND started_at >= $2 %s
	GROUP BY tool ORDER BY count(*) DESC, tool`

func (s *pgStore) dashboard(ctx context.Context, workspaceID int64, since time.Time, nPlusOne bool) ([]ToolStats, error) {
	if !nPlusOne {
		return s.dashboardQuery(ctx, fmt.Sprintf(pgDashboard, ""), workspaceID, since)
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT tool FROM usage WHERE workspace_id = $1 AND started_at >= $2`, workspaceID, since)
	if err != nil {
		return nil, err
	}
	tools, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []ToolStats
	for _, t := range tools {
		one, err := s.dashboardQuery(ctx, fmt.Sprintf(pgDashboard, "AND tool = $3"), workspaceID, since, t)
		if err != nil {
			return nil, err
		}
		out = append(out, one...)
	}
	sortStats(out)
	return out, nil
}

func (s *pgStore) dashboardQuery(ctx context.Context, q string, args ...any) ([]ToolStats, error) {
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ToolStats
	for rows.Next() {
		var t ToolStats
		if err := rows.Scan(&t.Tool, &t.Calls, &t.Errors, &t.P95DurationUS); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return finishStats(out), rows.Err()
}

func (s *pgStore) schemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

// barrier sends a marker notification and waits for the listener to see
// it: notifications arrive in commit order, so every event committed
// before has been delivered by then.
func (s *pgStore) barrier(ctx context.Context) error {
	var b [8]byte
	rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	ch := make(chan struct{})
	s.mu.Lock()
	s.barriers[nonce] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.barriers, nonce)
		s.mu.Unlock()
	}()
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, notifyChannel, "b "+nonce); err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *pgStore) close() {
	s.cancel()
	<-s.done
	s.pool.Close()
}

// listenLoop holds the LISTEN connection, reconnecting with backoff; after
// a reconnect it replays events with ids above the last one delivered.
func (s *pgStore) listenLoop(ctx context.Context) {
	defer close(s.done)
	first := true
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, &first)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn("relay: LISTEN connection lost; reconnecting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func (s *pgStore) listenOnce(ctx context.Context, first *bool) error {
	conn, err := pgx.ConnectConfig(ctx, s.listen.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	// replayed holds the ids of the events replayed after a reconnect: an
	// event committed between LISTEN and the replay's query also comes as
	// a notification, which is then skipped.
	var replayed map[int64]bool
	if *first {
		*first = false
		close(s.listening)
	} else if last := s.lastID.Load(); last > 0 {
		rows, err := s.pool.Query(ctx, `SELECT id, workspace_id, user_id, kind, payload, created_at
			FROM events WHERE id > $1 ORDER BY id LIMIT 10000`, last)
		if err != nil {
			return err
		}
		missed, err := scanEvents(rows)
		if err != nil {
			return err
		}
		replayed = make(map[int64]bool, len(missed))
		for _, e := range missed {
			replayed[e.ID] = true
			s.publish(e)
		}
	}
	for {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) && !conn.IsClosed() {
				if err := conn.Ping(ctx); err != nil {
					return err
				}
				continue
			}
			return err
		}
		s.handle(ctx, n.Payload, replayed)
	}
}

// handle decodes one notification: "b <nonce>" (a barrier),
// "e <id> <workspace> <user> <unix µs> <kind> <payload>" (a whole event) or
// "i <id> <workspace> <user> <unix µs> <kind>" (an event to fetch).
func (s *pgStore) handle(ctx context.Context, msg string, replayed map[int64]bool) {
	if nonce, ok := strings.CutPrefix(msg, "b "); ok {
		s.mu.Lock()
		ch := s.barriers[nonce]
		delete(s.barriers, nonce)
		s.mu.Unlock()
		if ch != nil {
			close(ch)
		}
		return
	}
	f := strings.SplitN(msg, " ", 7)
	if len(f) < 6 || (f[0] != "e" && f[0] != "i") {
		s.log.Warn("relay: ignoring a malformed notification", "payload", msg)
		return
	}
	var nums [4]int64
	for i := range nums {
		n, err := strconv.ParseInt(f[i+1], 10, 64)
		if err != nil {
			s.log.Warn("relay: ignoring a malformed notification", "payload", msg)
			return
		}
		nums[i] = n
	}
	if replayed[nums[0]] {
		delete(replayed, nums[0])
		return
	}
	ev := event{ID: nums[0], WorkspaceID: nums[1], UserID: nums[2], WrittenAt: time.UnixMicro(nums[3]).UTC(), Kind: f[5]}
	if f[0] == "e" && len(f) == 7 {
		ev.Payload = f[6]
	} else {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := s.pool.QueryRow(fctx, `SELECT payload FROM events WHERE id = $1`, ev.ID).Scan(&ev.Payload)
		cancel()
		if err != nil {
			s.log.Warn("relay: fetching a notified event failed", "id", ev.ID, "err", err)
			return
		}
	}
	s.publish(ev)
}

func (s *pgStore) publish(ev event) {
	for {
		last := s.lastID.Load()
		if ev.ID <= last || s.lastID.CompareAndSwap(last, ev.ID) {
			break
		}
	}
	if s.deliver != nil {
		s.deliver(ev)
	}
}
