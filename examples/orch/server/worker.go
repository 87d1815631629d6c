package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/headroom-dev/headroom/examples/orch/schema"
)

// tickShards is the number of goroutines ticking missions; a mission is
// always ticked by shard id % tickShards, so that its ticks run one at a
// time in this process (the mission row lock covers other workers).
const tickShards = 4

// Tick reasons, the label of orch_ticks_total.
const (
	reasonEvent = "event" // an event that changes what happens next (schema.TickKinds)
	reasonSweep = "sweep" // the periodic sweep found the mission needing work
)

// ticker holds the missions waiting for a tick, per shard.
type ticker struct {
	shards [tickShards]tickShard
}

type tickShard struct {
	mu    sync.Mutex
	dirty map[int64]string // mission → reason
	wake  chan struct{}
}

func newTicker() *ticker {
	t := &ticker{}
	for i := range t.shards {
		t.shards[i] = tickShard{dirty: map[int64]string{}, wake: make(chan struct{}, 1)}
	}
	return t
}

// mark asks for a tick of mission.
func (t *ticker) mark(mission int64, reason string) {
	sh := &t.shards[mission%tickShards]
	sh.mu.Lock()
	if _, ok := sh.dirty[mission]; !ok {
		sh.dirty[mission] = reason
	}
	sh.mu.Unlock()
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

func (sh *tickShard) take() map[int64]string {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.dirty) == 0 {
		return nil
	}
	d := sh.dirty
	sh.dirty = map[int64]string{}
	return d
}

// runWorker is the orchestrator of RoleWorker and RoleAll: it ticks a
// mission when an event that changes what happens next is written
// (mission.approved, task.done, task.failed — seen over LISTEN), and
// sweeps every ORCH_SWEEP_INTERVAL for missions needing a tick that a lost
// notification left behind.
func (s *Server) runWorker(ctx context.Context) {
	defer close(s.workerDone)
	var wg sync.WaitGroup
	for i := range s.ticks.shards {
		sh := &s.ticks.shards[i]
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case <-sh.wake:
				}
				for id, reason := range sh.take() {
					if ctx.Err() != nil {
						return
					}
					if err := s.tick(ctx, id, reason); err != nil && ctx.Err() == nil {
						s.log.Warn("orch: tick failed; the sweep will retry", "mission", id, "err", err.Error())
					}
				}
			}
		})
	}
	sweep := time.NewTicker(s.cfg.SweepInterval)
	defer sweep.Stop()
	s.sweep(ctx) // the backlog at start
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-sweep.C:
			s.sweep(ctx)
		}
	}
}

// sweepQuery finds the live missions a tick would change: one with a
// failed task, one with every task done, one with room for a pending task.
const sweepQuery = `SELECT m.id FROM missions m CROSS JOIN LATERAL (
		SELECT count(*) FILTER (WHERE status IN ('queued', 'running')) AS active,
			count(*) FILTER (WHERE status = 'pending') AS pending,
			count(*) FILTER (WHERE status = 'failed') AS failed,
			count(*) FILTER (WHERE status <> 'done') AS open
		FROM tasks t WHERE t.mission_id = m.id) c
	WHERE m.status IN ('approved', 'running') AND (c.failed > 0 OR c.open = 0 OR (c.pending > 0 AND c.active < m.max_parallel))`

func (s *Server) sweep(ctx context.Context) {
	rows, err := s.pool.Query(ctx, sweepQuery)
	if err == nil {
		var ids []int64
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		for _, id := range ids {
			s.ticks.mark(id, reasonSweep)
		}
	}
	if err != nil && ctx.Err() == nil {
		s.log.Warn("orch: sweep failed", "err", err.Error())
	}
}

// tick advances one mission, in one transaction holding the mission's row
// lock: a failed task fails the mission; every task done finishes it;
// otherwise pending tasks are queued (in seq order) until max_parallel
// tasks are queued or running, and the runners are woken.
func (s *Server) tick(ctx context.Context, id int64, reason string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var status string
		var maxParallel int
		err := tx.QueryRow(ctx, `SELECT status, max_parallel FROM missions WHERE id = $1 FOR UPDATE`, id).Scan(&status, &maxParallel)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if status != schema.MissionApproved && status != schema.MissionRunning {
			return nil
		}
		var active, pending, done, failed, total int
		var tokens int64
		var cost float64
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE t.status IN ('queued', 'running')),
				count(*) FILTER (WHERE t.status = 'pending'), count(*) FILTER (WHERE t.status = 'done'),
				count(*) FILTER (WHERE t.status = 'failed'), count(*),
				coalesce((SELECT sum(tokens) FROM ledger WHERE mission_id = $1), 0),
				coalesce((SELECT sum(cost) FROM ledger WHERE mission_id = $1), 0)::float8
			FROM tasks t WHERE t.mission_id = $1`, id).Scan(&active, &pending, &done, &failed, &total, &tokens, &cost); err != nil {
			return err
		}
		var evs []newEvent
		switch {
		case failed > 0:
			// Queued tasks go back to pending: no runner picks them now.
			if _, err := tx.Exec(ctx, `UPDATE tasks SET status = 'pending', queued_at = NULL WHERE mission_id = $1 AND status = 'queued'`, id); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE missions SET status = 'failed', finished_at = clock_timestamp() WHERE id = $1`, id); err != nil {
				return err
			}
			evs = append(evs, newEvent{mission: id, kind: schema.EventMissionFailed,
				data: map[string]any{"tasks": total, "done": done, "failed": failed, "tokens": tokens, "cost": cost}})
		case done == total:
			if _, err := tx.Exec(ctx, `UPDATE missions SET status = 'done', finished_at = clock_timestamp() WHERE id = $1`, id); err != nil {
				return err
			}
			evs = append(evs, newEvent{mission: id, kind: schema.EventMissionDone,
				data: map[string]any{"tasks": total, "done": done, "tokens": tokens, "cost": cost}})
		default:
			free := maxParallel - active
			if free <= 0 || pending == 0 {
				return nil
			}
			rows, err := tx.Query(ctx, `UPDATE tasks SET status = 'queued', queued_at = clock_timestamp()
				WHERE id IN (SELECT id FROM tasks WHERE mission_id = $1 AND status = 'pending' ORDER BY seq LIMIT $2)
				RETURNING id, seq`, id, free)
			if err != nil {
				return err
			}
			type queued struct{ id, seq int64 }
			q, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (queued, error) {
				var x queued
				return x, r.Scan(&x.id, &x.seq)
			})
			if err != nil {
				return err
			}
			if status == schema.MissionApproved {
				if _, err := tx.Exec(ctx, `UPDATE missions SET status = 'running' WHERE id = $1`, id); err != nil {
					return err
				}
				evs = append(evs, newEvent{mission: id, kind: schema.EventMissionRunning})
			}
			for _, x := range sortedBy(q, func(x queued) int64 { return x.seq }) {
				evs = append(evs, newEvent{mission: id, task: &x.id, kind: schema.EventTaskQueued, data: map[string]any{"seq": x.seq}})
			}
			if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, schema.QueueChannel, itoa(int64(len(q)))); err != nil {
				return err
			}
		}
		return insertEvents(ctx, tx, evs, s.metrics)
	})
	if err == nil {
		s.metrics.tick(reason)
		if reason == reasonSweep {
			s.tickCount[1].Add(1)
		} else {
			s.tickCount[0].Add(1)
		}
	}
	return err
}
