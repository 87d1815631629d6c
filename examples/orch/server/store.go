package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/headroom-dev/headroom/examples/orch/schema"
)

// errNotFound is a mission that does not exist.
var errNotFound = errors.New("no such mission")

// errConflict is a request the mission's status does not allow.
type errConflict struct{ msg string }

func (e errConflict) Error() string { return e.msg }

// openPool connects the pool (application_name set, UTC) and applies the
// migrations. Under a transaction pooler (cfg.Pooler) queries use the
// simple protocol.
func openPool(ctx context.Context, cfg Config) (*pgxpool.Pool, int, error) {
	pc, err := pgxpool.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return nil, 0, fmt.Errorf("orch: DATABASE_URL: %w", err)
	}
	pc.MaxConns = int32(cfg.DBMaxConns)
	pc.ConnConfig.RuntimeParams["application_name"] = cfg.appName()
	pc.ConnConfig.RuntimeParams["timezone"] = "UTC"
	if cfg.Pooler {
		pc.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
		pc.ConnConfig.StatementCacheCapacity = 0
		pc.ConnConfig.DescriptionCacheCapacity = 0
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, 0, fmt.Errorf("orch: connect to the database: %w", err)
	}
	version, err := schema.Migrate(ctx, pool)
	if err != nil {
		pool.Close()
		return nil, 0, err
	}
	return pool, version, nil
}

// Event is one row of events, as the board and the live stream show it.
type Event struct {
	ID        int64           `json:"id"`
	MissionID int64           `json:"mission_id"`
	TaskID    *int64          `json:"task_id"`
	Kind      string          `json:"kind"`
	WrittenAt time.Time       `json:"written_at"`
	Data      json.RawMessage `json:"data"`
}

// MarshalJSON writes written_at as RFC 3339 with nanoseconds in UTC.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain struct {
		ID        int64           `json:"id"`
		MissionID int64           `json:"mission_id"`
		TaskID    *int64          `json:"task_id"`
		Kind      string          `json:"kind"`
		WrittenAt string          `json:"written_at"`
		Data      json.RawMessage `json:"data"`
	}
	d := e.Data
	if len(d) == 0 {
		d = json.RawMessage("{}")
	}
	return json.Marshal(plain{e.ID, e.MissionID, e.TaskID, e.Kind, e.WrittenAt.UTC().Format(time.RFC3339Nano), d})
}

const eventColumns = `id, mission_id, task_id, kind, written_at, data`

func scanEvents(rows pgx.Rows) ([]Event, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		var data []byte
		err := r.Scan(&e.ID, &e.MissionID, &e.TaskID, &e.Kind, &e.WrittenAt, &data)
		e.Data = data
		return e, err
	})
	if out == nil {
		out = []Event{}
	}
	return out, err
}

// newEvent is an event to write.
type newEvent struct {
	mission int64
	task    *int64
	kind    string
	data    any
}

// insertEvents writes evs in tx, each mission's under its advisory lock
// (taken in mission order, so that two transactions never wait on each
// other in a cycle) and in the order given within a mission. The lock is
// held to commit: a mission's event ids follow commit order, which is the
// order of their NOTIFYs (the events trigger), so a stream that has seen
// event N has seen every earlier event of its mission. Call it last in the
// transaction, to hold the lock briefly.
func insertEvents(ctx context.Context, tx pgx.Tx, evs []newEvent, m *metrics) error {
	if len(evs) == 0 {
		return nil
	}
	slices.SortStableFunc(evs, func(a, b newEvent) int { return cmpInt(a.mission, b.mission) })
	missions := make([]int64, 0, 4)
	for _, e := range evs {
		if len(missions) == 0 || missions[len(missions)-1] != e.mission {
			missions = append(missions, e.mission)
		}
	}
	for _, id := range missions {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::int, ($2::bigint % 2147483647)::int)`, schema.MissionLockClass, id); err != nil {
			return err
		}
	}
	ms := make([]int64, len(evs))
	ts := make([]*int64, len(evs))
	ks := make([]string, len(evs))
	ds := make([]string, len(evs))
	for i, e := range evs {
		ms[i], ts[i], ks[i] = e.mission, e.task, e.kind
		ds[i] = "{}"
		if e.data != nil {
			b, err := json.Marshal(e.data)
			if err != nil {
				return err
			}
			ds[i] = string(b)
		}
	}
	// WITH ORDINALITY keeps the given order: ids are drawn row by row.
	if _, err := tx.Exec(ctx, `INSERT INTO events (mission_id, task_id, kind, data)
		SELECT m, t, k, d::jsonb FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[]) WITH ORDINALITY AS x(m, t, k, d, n) ORDER BY n`,
		ms, ts, ks, ds); err != nil {
		return err
	}
	for _, e := range evs {
		m.event(e.kind)
	}
	return nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TaskIn is a task of a mission to create.
type TaskIn struct {
	Title  string `json:"title"`
	Prompt string `json:"prompt"`
}

// MissionIn is a mission to create.
type MissionIn struct {
	Title       string   `json:"title"`
	MaxParallel int      `json:"max_parallel"`
	Tasks       []TaskIn `json:"tasks"`
}

// Mission is a mission with its task counts by status.
type Mission struct {
	ID          int64            `json:"id"`
	Title       string           `json:"title"`
	Status      string           `json:"status"`
	MaxParallel int              `json:"max_parallel"`
	CreatedAt   time.Time        `json:"created_at"`
	ApprovedAt  *time.Time       `json:"approved_at"`
	FinishedAt  *time.Time       `json:"finished_at"`
	TaskCounts  map[string]int64 `json:"task_counts"`
	Tasks       []Task           `json:"tasks,omitempty"`
}

// Task is one task of a mission.
type Task struct {
	ID         int64      `json:"id"`
	MissionID  int64      `json:"mission_id"`
	Seq        int        `json:"seq"`
	Title      string     `json:"title"`
	Prompt     string     `json:"prompt"`
	Status     string     `json:"status"`
	Attempts   int        `json:"attempts"`
	Result     *string    `json:"result"`
	Runner     *string    `json:"runner"`
	CreatedAt  time.Time  `json:"created_at"`
	QueuedAt   *time.Time `json:"queued_at"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
}

const taskColumns = `id, mission_id, seq, title, prompt, status, attempts, result, runner, created_at, queued_at, started_at, finished_at`

func scanTasks(rows pgx.Rows) ([]Task, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Task, error) {
		var t Task
		return t, r.Scan(&t.ID, &t.MissionID, &t.Seq, &t.Title, &t.Prompt, &t.Status, &t.Attempts, &t.Result, &t.Runner,
			&t.CreatedAt, &t.QueuedAt, &t.StartedAt, &t.FinishedAt)
	})
	if out == nil {
		out = []Task{}
	}
	return out, err
}

func countsOf(tasks []Task) map[string]int64 {
	c := map[string]int64{}
	for _, s := range schema.TaskStatuses {
		c[s] = 0
	}
	for _, t := range tasks {
		c[t.Status]++
	}
	return c
}

// createMissions writes the missions (drafts) with their tasks and a
// mission.created event each, in one transaction.
func createMissions(ctx context.Context, db *pgxpool.Pool, in []MissionIn, m *metrics) ([]Mission, error) {
	out := make([]Mission, 0, len(in))
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		out = out[:0]
		evs := make([]newEvent, 0, len(in))
		for _, mi := range in {
			ms := Mission{Title: mi.Title, Status: schema.MissionDraft, MaxParallel: mi.MaxParallel}
			if err := tx.QueryRow(ctx, `INSERT INTO missions (title, max_parallel) VALUES ($1, $2) RETURNING id, created_at`,
				mi.Title, mi.MaxParallel).Scan(&ms.ID, &ms.CreatedAt); err != nil {
				return err
			}
			titles := make([]string, len(mi.Tasks))
			prompts := make([]string, len(mi.Tasks))
			for i, t := range mi.Tasks {
				titles[i], prompts[i] = t.Title, t.Prompt
			}
			rows, err := tx.Query(ctx, `INSERT INTO tasks (mission_id, seq, title, prompt)
				SELECT $1, n, t, p FROM unnest($2::text[], $3::text[]) WITH ORDINALITY AS x(t, p, n) ORDER BY n
				RETURNING `+taskColumns, ms.ID, titles, prompts)
			if err != nil {
				return err
			}
			if ms.Tasks, err = scanTasks(rows); err != nil {
				return err
			}
			slices.SortFunc(ms.Tasks, func(a, b Task) int { return a.Seq - b.Seq })
			ms.TaskCounts = countsOf(ms.Tasks)
			out = append(out, ms)
			evs = append(evs, newEvent{mission: ms.ID, kind: schema.EventMissionCreated,
				data: map[string]any{"title": ms.Title, "tasks": len(ms.Tasks), "max_parallel": ms.MaxParallel}})
		}
		return insertEvents(ctx, tx, evs, m)
	})
	return out, err
}

// approveMissions approves drafts (ids, or every draft when all), in one
// transaction with one mission.approved event (and so one NOTIFY) per
// mission; it returns the ids approved.
func approveMissions(ctx context.Context, db *pgxpool.Pool, ids []int64, all bool, m *metrics) ([]int64, error) {
	var done []int64
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE missions SET status = 'approved', approved_at = clock_timestamp()
			WHERE status = 'draft' AND ($2 OR id = ANY($1)) RETURNING id`, ids, all)
		if err != nil {
			return err
		}
		if done, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		slices.Sort(done)
		evs := make([]newEvent, len(done))
		for i, id := range done {
			evs[i] = newEvent{mission: id, kind: schema.EventMissionApproved}
		}
		return insertEvents(ctx, tx, evs, m)
	})
	if done == nil {
		done = []int64{}
	}
	return done, err
}

// approveMission approves one draft: errNotFound when there is no such
// mission, errConflict when it is not a draft.
func approveMission(ctx context.Context, db *pgxpool.Pool, id int64, m *metrics) error {
	done, err := approveMissions(ctx, db, []int64{id}, false, m)
	if err != nil || len(done) == 1 {
		return err
	}
	var status string
	err = db.QueryRow(ctx, `SELECT status FROM missions WHERE id = $1`, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotFound
	}
	if err != nil {
		return err
	}
	return errConflict{fmt.Sprintf("mission %d is %s, not a draft", id, status)}
}

// PageSize is the number of missions on a page of the list.
const PageSize = 25

const missionColumns = `m.id, m.title, m.status, m.max_parallel, m.created_at, m.approved_at, m.finished_at,
	c.pending, c.queued, c.running, c.done, c.failed`

const missionCounts = ` CROSS JOIN LATERAL (SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
	count(*) FILTER (WHERE status = 'queued') AS queued, count(*) FILTER (WHERE status = 'running') AS running,
	count(*) FILTER (WHERE status = 'done') AS done, count(*) FILTER (WHERE status = 'failed') AS failed
	FROM tasks t WHERE t.mission_id = m.id) c`

func scanMissions(rows pgx.Rows) ([]Mission, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Mission, error) {
		var ms Mission
		var c [5]int64
		err := r.Scan(&ms.ID, &ms.Title, &ms.Status, &ms.MaxParallel, &ms.CreatedAt, &ms.ApprovedAt, &ms.FinishedAt,
			&c[0], &c[1], &c[2], &c[3], &c[4])
		ms.TaskCounts = map[string]int64{}
		for i, s := range schema.TaskStatuses {
			ms.TaskCounts[s] = c[i]
		}
		return ms, err
	})
	if out == nil {
		out = []Mission{}
	}
	return out, err
}

// listMissions is a page of missions (of one status, or all), newest
// first, with their task counts, and the number of such missions.
func listMissions(ctx context.Context, db *pgxpool.Pool, status string, page int) ([]Mission, int64, error) {
	b := &pgx.Batch{}
	off := (page - 1) * PageSize
	if status == "" {
		b.Queue(`SELECT `+missionColumns+` FROM missions m`+missionCounts+` ORDER BY m.id DESC LIMIT $1 OFFSET $2`, PageSize, off)
		b.Queue(`SELECT count(*) FROM missions`)
	} else {
		b.Queue(`SELECT `+missionColumns+` FROM missions m`+missionCounts+` WHERE m.status = $3 ORDER BY m.id DESC LIMIT $1 OFFSET $2`, PageSize, off, status)
		b.Queue(`SELECT count(*) FROM missions WHERE status = $1`, status)
	}
	res := db.SendBatch(ctx, b)
	defer res.Close()
	rows, _ := res.Query()
	list, err := scanMissions(rows)
	if err != nil {
		return nil, 0, err
	}
	var total int64
	err = res.QueryRow().Scan(&total)
	return list, total, err
}

// MissionPage is the mission page: the mission, its tasks, its last
// events (oldest first) and its spend.
type MissionPage struct {
	Mission Mission `json:"mission"`
	Tasks   []Task  `json:"tasks"`
	Events  []Event `json:"events"`
	Spend   Spend   `json:"spend"`
}

// Spend is money and tokens settled.
type Spend struct {
	Attempts int64   `json:"attempts"`
	Tokens   int64   `json:"tokens"`
	Cost     float64 `json:"cost"`
}

// pageEvents is how many of its last events the mission page shows.
const pageEvents = 50

// loadMissionPage reads the mission page in one round trip.
func loadMissionPage(ctx context.Context, db *pgxpool.Pool, id int64) (*MissionPage, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT `+missionColumns+` FROM missions m`+missionCounts+` WHERE m.id = $1`, id)
	b.Queue(`SELECT `+taskColumns+` FROM tasks WHERE mission_id = $1 ORDER BY seq`, id)
	b.Queue(`SELECT `+eventColumns+` FROM (SELECT `+eventColumns+` FROM events WHERE mission_id = $1 ORDER BY id DESC LIMIT $2) e ORDER BY id`, id, pageEvents)
	b.Queue(`SELECT count(*), coalesce(sum(tokens), 0), coalesce(sum(cost), 0)::float8 FROM ledger WHERE mission_id = $1`, id)
	res := db.SendBatch(ctx, b)
	defer res.Close()
	var p MissionPage
	rows, _ := res.Query()
	ms, err := scanMissions(rows)
	if err != nil {
		return nil, err
	}
	if len(ms) == 0 {
		return nil, errNotFound
	}
	p.Mission = ms[0]
	rows, _ = res.Query()
	if p.Tasks, err = scanTasks(rows); err != nil {
		return nil, err
	}
	rows, _ = res.Query()
	if p.Events, err = scanEvents(rows); err != nil {
		return nil, err
	}
	err = res.QueryRow().Scan(&p.Spend.Attempts, &p.Spend.Tokens, &p.Spend.Cost)
	return &p, err
}

// missionExists reports whether mission id exists.
func missionExists(ctx context.Context, db *pgxpool.Pool, id int64) (bool, error) {
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM missions WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}

// eventsAfter reads up to limit events of a mission after id, in order.
func eventsAfter(ctx context.Context, db *pgxpool.Pool, mission, after int64, limit int) ([]Event, error) {
	rows, err := db.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE mission_id = $1 AND id > $2 ORDER BY id LIMIT $3`, mission, after, limit)
	if err != nil {
		return nil, err
	}
	return scanEvents(rows)
}

// eventByID reads one event (a notification too large to carry it).
func eventByID(ctx context.Context, db *pgxpool.Pool, id int64) (Event, error) {
	rows, err := db.Query(ctx, `SELECT `+eventColumns+` FROM events WHERE id = $1`, id)
	if err != nil {
		return Event{}, err
	}
	evs, err := scanEvents(rows)
	if err == nil && len(evs) == 0 {
		err = fmt.Errorf("event %d not found", id)
	}
	if err != nil {
		return Event{}, err
	}
	return evs[0], nil
}

// Inbox is what waits on people: missions to approve and failed tasks.
type Inbox struct {
	AwaitingApproval      []Mission    `json:"awaiting_approval"`
	AwaitingApprovalCount int64        `json:"awaiting_approval_count"`
	FailedTasks           []FailedTask `json:"failed_tasks"`
	FailedTaskCount       int64        `json:"failed_task_count"`
}

// FailedTask is a task that failed for good, with its mission's title.
type FailedTask struct {
	Task
	MissionTitle string `json:"mission_title"`
}

// inboxLimit bounds each list of the inbox.
const inboxLimit = 50

// loadInbox reads the inbox: one query for the drafts (with their count),
// one for the failed tasks (with theirs), in one round trip.
func loadInbox(ctx context.Context, db *pgxpool.Pool) (*Inbox, error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT m.id, m.title, m.max_parallel, m.created_at, count(*) OVER () FROM missions m
		WHERE m.status = 'draft' ORDER BY m.id DESC LIMIT $1`, inboxLimit)
	b.Queue(`SELECT t.id, t.mission_id, t.seq, t.title, t.prompt, t.status, t.attempts, t.result, t.runner, t.created_at,
		t.queued_at, t.started_at, t.finished_at, m.title, count(*) OVER () FROM tasks t JOIN missions m ON m.id = t.mission_id
		WHERE t.status = 'failed' ORDER BY t.finished_at DESC, t.id DESC LIMIT $1`, inboxLimit)
	res := db.SendBatch(ctx, b)
	defer res.Close()
	in := &Inbox{AwaitingApproval: []Mission{}, FailedTasks: []FailedTask{}}
	rows, _ := res.Query()
	for rows.Next() {
		ms := Mission{Status: schema.MissionDraft}
		if err := rows.Scan(&ms.ID, &ms.Title, &ms.MaxParallel, &ms.CreatedAt, &in.AwaitingApprovalCount); err != nil {
			rows.Close()
			return nil, err
		}
		in.AwaitingApproval = append(in.AwaitingApproval, ms)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, _ = res.Query()
	for rows.Next() {
		var f FailedTask
		t := &f.Task
		if err := rows.Scan(&t.ID, &t.MissionID, &t.Seq, &t.Title, &t.Prompt, &t.Status, &t.Attempts, &t.Result, &t.Runner,
			&t.CreatedAt, &t.QueuedAt, &t.StartedAt, &t.FinishedAt, &f.MissionTitle, &in.FailedTaskCount); err != nil {
			rows.Close()
			return nil, err
		}
		in.FailedTasks = append(in.FailedTasks, f)
	}
	return in, rows.Err()
}

// RunnerScore is one runner's last hour.
type RunnerScore struct {
	Runner     string  `json:"runner"`
	Attempts   int64   `json:"attempts"`
	Running    int64   `json:"running"`
	Succeeded  int64   `json:"succeeded"`
	Failed     int64   `json:"failed"`
	Success    float64 `json:"success_rate"`
	AvgSeconds float64 `json:"avg_duration_seconds"`
}

// loadScoreboard counts each runner's attempts started in the last hour.
func loadScoreboard(ctx context.Context, db *pgxpool.Pool) ([]RunnerScore, error) {
	rows, err := db.Query(ctx, `SELECT runner, count(*), count(*) FILTER (WHERE finished_at IS NULL),
		count(*) FILTER (WHERE outcome = 'ok'), count(*) FILTER (WHERE outcome = 'error'),
		coalesce(avg(extract(epoch FROM finished_at - started_at)) FILTER (WHERE finished_at IS NOT NULL), 0)::float8
		FROM attempts WHERE started_at > now() - interval '1 hour' GROUP BY runner ORDER BY runner`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (RunnerScore, error) {
		var s RunnerScore
		err := r.Scan(&s.Runner, &s.Attempts, &s.Running, &s.Succeeded, &s.Failed, &s.AvgSeconds)
		if settled := s.Succeeded + s.Failed; settled > 0 {
			s.Success = float64(s.Succeeded) / float64(settled)
		}
		return s, err
	})
	if out == nil {
		out = []RunnerScore{}
	}
	return out, err
}

// Budgets is this month's spend: in all, per day, the top missions.
type Budgets struct {
	Month       string         `json:"month"`
	Total       Spend          `json:"total"`
	Days        []DaySpend     `json:"days"`
	TopMissions []MissionSpend `json:"top_missions"`
}

// DaySpend is one day's spend.
type DaySpend struct {
	Day string `json:"day"`
	Spend
}

// MissionSpend is one mission's spend this month.
type MissionSpend struct {
	MissionID int64  `json:"mission_id"`
	Title     string `json:"title"`
	Spend
}

// loadBudgets reads the month's spend from the ledger's settled_at index
// (three queries, one round trip).
func loadBudgets(ctx context.Context, db *pgxpool.Pool) (*Budgets, error) {
	const month = `settled_at >= date_trunc('month', now())`
	b := &pgx.Batch{}
	b.Queue(`SELECT to_char(date_trunc('month', now()), 'YYYY-MM'), count(*), coalesce(sum(tokens), 0), coalesce(sum(cost), 0)::float8 FROM ledger WHERE ` + month)
	b.Queue(`SELECT to_char(date_trunc('day', settled_at), 'YYYY-MM-DD') d, count(*), sum(tokens), sum(cost)::float8 FROM ledger WHERE ` + month + ` GROUP BY d ORDER BY d`)
	b.Queue(`SELECT l.mission_id, m.title, l.n, l.tokens, l.cost FROM (
		SELECT mission_id, count(*) n, sum(tokens) tokens, sum(cost)::float8 cost FROM ledger WHERE ` + month + `
		GROUP BY mission_id ORDER BY cost DESC, mission_id LIMIT 10) l JOIN missions m ON m.id = l.mission_id ORDER BY l.cost DESC, l.mission_id`)
	res := db.SendBatch(ctx, b)
	defer res.Close()
	out := &Budgets{Days: []DaySpend{}, TopMissions: []MissionSpend{}}
	if err := res.QueryRow().Scan(&out.Month, &out.Total.Attempts, &out.Total.Tokens, &out.Total.Cost); err != nil {
		return nil, err
	}
	rows, _ := res.Query()
	for rows.Next() {
		var d DaySpend
		if err := rows.Scan(&d.Day, &d.Attempts, &d.Tokens, &d.Cost); err != nil {
			rows.Close()
			return nil, err
		}
		out.Days = append(out.Days, d)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, _ = res.Query()
	for rows.Next() {
		var s MissionSpend
		if err := rows.Scan(&s.MissionID, &s.Title, &s.Attempts, &s.Tokens, &s.Cost); err != nil {
			rows.Close()
			return nil, err
		}
		out.TopMissions = append(out.TopMissions, s)
	}
	return out, rows.Err()
}
