package server

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, pure Go

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

// sqliteStore keeps everything in one SQLite file in WAL mode: one writer
// connection (SQLite allows one writer at a time) and a small pool of
// readers. Events fan out in process, after the write commits.
//
// Writes go through one writer goroutine that commits whatever calls are
// waiting in one transaction (group commit): alone, a call is committed by
// itself; under load, many calls share a commit's WAL writes and locks.
type sqliteStore struct {
	w, r    *sql.DB
	deliver func(event)
	// insUsage and insEvent are prepared once on the single writer
	// connection, so a call's writes parse no SQL.
	insUsage, insEvent *sql.Stmt
	queue              chan *sqliteWrite
	quit               chan struct{}
	done               chan struct{}
	closeOnce          sync.Once
}

// maxBatch is the most calls one SQLite transaction commits.
const maxBatch = 256

// sqliteWrite is one call's rows waiting for the writer; a nil payload
// pointer (barrier) writes nothing.
type sqliteWrite struct {
	rec     callRecord
	payload string
	barrier bool
	ev      event
	err     error
	done    chan struct{}
}

// sqliteDSN returns the DSN for path with the relay's pragmas.
func sqliteDSN(path string, readOnly bool) string {
	q := "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(1)&_txlock=immediate"
	if readOnly {
		q += "&_pragma=query_only(1)"
	}
	return "file:" + path + q
}

// openSQLite opens (creating if needed) the file at path and applies the
// migrations. readers is the size of the read pool.
func openSQLite(ctx context.Context, path string, readers int, deliver func(event)) (*sqliteStore, error) {
	w, err := sql.Open("sqlite", sqliteDSN(path, false))
	if err != nil {
		return nil, fmt.Errorf("relay: open SQLite %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	w.SetConnMaxLifetime(0)
	if err := w.PingContext(ctx); err != nil {
		w.Close()
		return nil, fmt.Errorf("relay: open SQLite %s (RELAY_SQLITE_PATH): %w", path, err)
	}
	if err := migrateSQLite(ctx, w); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sql.Open("sqlite", sqliteDSN(path, true))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("relay: open SQLite %s: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxIdleTime(0)
	s := &sqliteStore{w: w, r: r, deliver: deliver,
		queue: make(chan *sqliteWrite, maxBatch), quit: make(chan struct{}), done: make(chan struct{})}
	if s.insUsage, err = w.PrepareContext(ctx, `
		INSERT INTO usage (workspace_id, user_id, connector_id, tool, started_at, duration_us, outcome, bytes)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`); err == nil {
		s.insEvent, err = w.PrepareContext(ctx, `
			INSERT INTO events (workspace_id, user_id, kind, payload, created_at)
			VALUES (?, ?, ?, ?, ?) RETURNING id`)
	}
	if err != nil {
		close(s.done)
		s.close()
		return nil, fmt.Errorf("relay: SQLite: %w", err)
	}
	go s.writer()
	return s, nil
}

// migrateSQLite applies the missing migrations, each in its own
// transaction (BEGIN IMMEDIATE: one migrator at a time).
func migrateSQLite(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, schema.VersionTable); err != nil {
		return fmt.Errorf("relay: migrate: %w", err)
	}
	for _, m := range schema.Migrations(schema.SQLite) {
		err := func() error {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			var v int
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v); err != nil {
				return err
			}
			if v >= m.Version {
				return nil
			}
			for _, s := range m.Statements {
				if _, err := tx.ExecContext(ctx, s); err != nil {
					return fmt.Errorf("%w in %s", err, firstLine(s))
				}
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (?)`, m.Version); err != nil {
				return err
			}
			return tx.Commit()
		}()
		if err != nil {
			return fmt.Errorf("relay: migrate SQLite to version %d: %w", m.Version, err)
		}
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func (s *sqliteStore) dialect() string { return "sqlite" }

func (s *sqliteStore) connections() (inUse, idle, most int) {
	for _, db := range []*sql.DB{s.w, s.r} {
		st := db.Stats()
		inUse, idle, most = inUse+st.InUse, idle+st.Idle, most+st.MaxOpenConnections
	}
	return inUse, idle, most
}

func (s *sqliteStore) authenticate(ctx context.Context, tokenHash string) (principal, bool, error) {
	rows, err := s.r.QueryContext(ctx, `
		SELECT u.id, u.workspace_id, c.id, c.name, c.upstream_url
		FROM users u LEFT JOIN connectors c ON c.user_id = u.id
		WHERE u.token_hash = ? ORDER BY c.id`, tokenHash)
	if err != nil {
		return principal{}, false, err
	}
	defer rows.Close()
	var p principal
	found := false
	for rows.Next() {
		var cid sql.NullInt64
		var name, url sql.NullString
		if err := rows.Scan(&p.UserID, &p.WorkspaceID, &cid, &name, &url); err != nil {
			return principal{}, false, err
		}
		found = true
		if cid.Valid {
			p.Connectors = append(p.Connectors, connector{ID: cid.Int64, Name: name.String, URL: url.String})
		}
	}
	return p, found, rows.Err()
}

func (s *sqliteStore) recordCall(ctx context.Context, rec callRecord, payload string) (event, error) {
	w := &sqliteWrite{rec: rec, payload: payload, done: make(chan struct{})}
	if err := s.enqueue(ctx, w); err != nil {
		return event{}, err
	}
	return w.ev, w.err
}

// enqueue hands w to the writer and waits for it to be done.
func (s *sqliteStore) enqueue(ctx context.Context, w *sqliteWrite) error {
	select {
	case s.queue <- w:
	case <-s.quit:
		return errStoreClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writer commits the queued writes in batches, then delivers their events
// in id order.
func (s *sqliteStore) writer() {
	defer close(s.done)
	batch := make([]*sqliteWrite, 0, maxBatch)
	for {
		select {
		case w := <-s.queue:
			batch = append(batch[:0], w)
		case <-s.quit:
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case w := <-s.queue:
				batch = append(batch, w)
			default:
				break fill
			}
		}
		if err := s.commit(batch); err != nil {
			// One bad write must not fail the others: retry one by one.
			for _, w := range batch {
				w.err = s.commit([]*sqliteWrite{w})
			}
		}
		for _, w := range batch {
			if w.err == nil && !w.barrier && s.deliver != nil {
				s.deliver(w.ev)
			}
			close(w.done)
		}
	}
}

// commit writes the usage and event rows of batch in one transaction.
func (s *sqliteStore) commit(batch []*sqliteWrite) error {
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	insUsage, insEvent := tx.StmtContext(ctx, s.insUsage), tx.StmtContext(ctx, s.insEvent)
	for _, w := range batch {
		if w.barrier {
			continue
		}
		rec := w.rec
		if _, err := insUsage.ExecContext(ctx, rec.WorkspaceID, rec.UserID, rec.ConnectorID, rec.Tool,
			rec.StartedAt.UnixMicro(), rec.Duration.Microseconds(), rec.Outcome, rec.Bytes); err != nil {
			return err
		}
		w.ev = event{WorkspaceID: rec.WorkspaceID, UserID: rec.UserID, Kind: "call", Payload: w.payload,
			WrittenAt: time.Now().UTC().Truncate(time.Microsecond)}
		if err := insEvent.QueryRowContext(ctx, w.ev.WorkspaceID, w.ev.UserID, w.ev.Kind, w.ev.Payload,
			w.ev.WrittenAt.UnixMicro()).Scan(&w.ev.ID); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (s *sqliteStore) eventsAfter(ctx context.Context, workspaceID, userID, afterID int64, limit int) ([]event, error) {
	q := `SELECT id, workspace_id, user_id, kind, payload, created_at FROM events
		WHERE workspace_id = ? AND id > ? AND (? = 0 OR user_id = ?) ORDER BY id LIMIT ?`
	rows, err := s.r.QueryContext(ctx, q, workspaceID, afterID, userID, userID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var e event
		var us int64
		if err := rows.Scan(&e.ID, &e.WorkspaceID, &e.UserID, &e.Kind, &e.Payload, &us); err != nil {
			return nil, err
		}
		e.WrittenAt = time.UnixMicro(us).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// sqliteDashboard selects the window's calls sorted by tool and duration
// through the (workspace_id, started_at) index. SQLite has no
// percentile_cont, and its window functions cost twice as much as this
// sort here, so the relay walks the sorted rows and interpolates the 95th
// percentile between ranks as percentile_cont does.
const sqliteDashboard = `
	SELECT tool, duration_us, outcome <> 'ok' FROM usage
	WHERE workspace_id = ? AND started_at >= ? %s
	ORDER BY tool, duration_us`

func (s *sqliteStore) dashboard(ctx context.Context, workspaceID int64, since time.Time, nPlusOne bool) ([]ToolStats, error) {
	if !nPlusOne {
		return s.dashboardQuery(ctx, fmt.Sprintf(sqliteDashboard, ""), workspaceID, since.UnixMicro())
	}
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT tool FROM usage WHERE workspace_id = ? AND started_at >= ?`,
		workspaceID, since.UnixMicro())
	if err != nil {
		return nil, err
	}
	var tools []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return nil, err
		}
		tools = append(tools, t)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []ToolStats
	for _, t := range tools {
		one, err := s.dashboardQuery(ctx, fmt.Sprintf(sqliteDashboard, "AND tool = ?"), workspaceID, since.UnixMicro(), t)
		if err != nil {
			return nil, err
		}
		out = append(out, one...)
	}
	sortStats(out)
	return out, nil
}

func (s *sqliteStore) dashboardQuery(ctx context.Context, q string, args ...any) ([]ToolStats, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var (
		out       []ToolStats
		cur       ToolStats
		durations []float64 // the current tool's, ascending
	)
	flush := func() {
		if cur.Calls == 0 {
			return
		}
		lo := int64(math.Floor(0.95 * float64(cur.Calls-1)))
		hi := min(lo+1, cur.Calls-1)
		cur.P95DurationUS = p95(cur.Calls, durations[lo], durations[hi])
		out = append(out, cur)
	}
	for rows.Next() {
		var tool string
		var d float64
		var failed bool
		if err := rows.Scan(&tool, &d, &failed); err != nil {
			return nil, err
		}
		if tool != cur.Tool || cur.Calls == 0 {
			flush()
			cur, durations = ToolStats{Tool: tool}, durations[:0]
		}
		cur.Calls++
		if failed {
			cur.Errors++
		}
		durations = append(durations, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	flush()
	sortStats(out)
	return finishStats(out), nil
}

func (s *sqliteStore) schemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

// barrier passes through the writer's queue: every write queued before it
// has been committed and delivered when it returns.
func (s *sqliteStore) barrier(ctx context.Context) error {
	return s.enqueue(ctx, &sqliteWrite{barrier: true, done: make(chan struct{})})
}

func (s *sqliteStore) close() {
	s.closeOnce.Do(func() { close(s.quit) })
	<-s.done
	if s.insUsage != nil {
		s.insUsage.Close()
	}
	if s.insEvent != nil {
		s.insEvent.Close()
	}
	s.r.Close()
	s.w.Close()
}
