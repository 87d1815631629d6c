package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/headroom-dev/headroom/examples/internal/kit"
	"github.com/headroom-dev/headroom/examples/orch/schema"
)

// job is a claimed task with its attempt.
type job struct {
	task, mission, attempt int64
	seq, attempts          int
	title, prompt          string
}

// runnerState is a runner's bookkeeping.
type runnerState struct {
	running   atomic.Int64 // attempts in flight
	claims    atomic.Int64 // claim queries run
	claimed   atomic.Int64 // tasks claimed
	backlog   atomic.Bool  // the last claim filled every free slot: there may be more
	abandoned atomic.Int64 // attempts given back to the queue by a drain
	wake      chan struct{}
	wg        sync.WaitGroup
	stopClaim context.CancelFunc // stops the claim loop (drain)
	claimDone chan struct{}
	jobCtx    context.Context // the attempts' context, cancelled when a drain times out
	cancelJob context.CancelFunc
}

// RunnerStats are a runner's counters.
type RunnerStats struct {
	// Claims is the number of claim queries run; Claimed the tasks they
	// took; Running the attempts in flight now; Slots the most at once.
	Claims, Claimed, Running int64
	Slots                    int
}

// RunnerStats returns the runner's counters (zero for other roles).
func (s *Server) RunnerStats() RunnerStats {
	if s.runner == nil {
		return RunnerStats{}
	}
	r := s.runner
	return RunnerStats{Claims: r.claims.Load(), Claimed: r.claimed.Load(), Running: r.running.Load(), Slots: s.cfg.RunnerSlots}
}

func (s *Server) wakeRunner() {
	if s.runner == nil {
		return
	}
	select {
	case s.runner.wake <- struct{}{}:
	default:
	}
}

// claimLoop is the runner's one claim loop: whenever it is woken (NOTIFY
// on the queue channel, a finished attempt while there is a backlog, or
// every ORCH_CLAIM_INTERVAL), it asks for as many queued tasks as it has
// free slots, in one query, and starts an attempt for each. It never polls
// per slot.
func (s *Server) claimLoop(ctx context.Context) {
	r := s.runner
	defer close(r.claimDone)
	tick := time.NewTicker(s.cfg.ClaimInterval)
	defer tick.Stop()
	for {
		free := s.cfg.RunnerSlots - int(r.running.Load())
		if free > 0 {
			jobs, err := s.claim(ctx, free)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.log.Warn("orch: claim failed", "err", err.Error())
			}
			r.backlog.Store(len(jobs) == free)
			for _, j := range jobs {
				r.running.Add(1)
				r.wg.Go(func() { s.runAttempt(j) })
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-tick.C:
		}
	}
}

// claimQuery takes up to $1 queued tasks (oldest first, skipping those
// another runner is taking), starts them and opens an attempt for each.
const claimQuery = `WITH c AS (
		UPDATE tasks SET status = 'running', attempts = attempts + 1, started_at = clock_timestamp(), runner = $2
		WHERE id IN (SELECT id FROM tasks WHERE status = 'queued' ORDER BY queued_at, id FOR UPDATE SKIP LOCKED LIMIT $1)
		RETURNING id, mission_id, seq, title, prompt, attempts),
	a AS (INSERT INTO attempts (task_id, mission_id, runner) SELECT id, mission_id, $2 FROM c RETURNING id, task_id)
	SELECT c.id, c.mission_id, a.id, c.seq, c.attempts, c.title, c.prompt FROM c JOIN a ON a.task_id = c.id ORDER BY c.mission_id, c.seq`

// claim runs one claim transaction for up to free tasks, writing a
// task.started event for each.
func (s *Server) claim(ctx context.Context, free int) ([]job, error) {
	s.runner.claims.Add(1)
	s.metrics.claim()
	var jobs []job
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, claimQuery, free, s.cfg.RunnerName)
		if err != nil {
			return err
		}
		jobs, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
			var j job
			return j, r.Scan(&j.task, &j.mission, &j.attempt, &j.seq, &j.attempts, &j.title, &j.prompt)
		})
		if err != nil {
			return err
		}
		evs := make([]newEvent, len(jobs))
		for i, j := range jobs {
			evs[i] = newEvent{mission: j.mission, task: &j.task, kind: schema.EventTaskStarted,
				data: map[string]any{"seq": j.seq, "attempt": j.attempts, "attempt_id": j.attempt, "runner": s.cfg.RunnerName}}
		}
		return insertEvents(ctx, tx, evs, s.metrics)
	})
	if err != nil {
		return nil, err
	}
	s.runner.claimed.Add(int64(len(jobs)))
	return jobs, nil
}

// vendorAnswer is what an attempt learned from the vendor.
type vendorAnswer struct {
	result string
	tokens int64
}

// costPerToken is what the orchestrator books per token (USD).
const costPerToken = 0.000002

// resultBytes bounds the result kept on a task.
const resultBytes = 2000

// settleTimeout bounds the transaction that settles an attempt.
const settleTimeout = 30 * time.Second

// runAttempt calls the vendor for j and settles the attempt: done, retry
// (queued again) or failed; or, when a drain cut it off, back to the
// queue. It frees the slot and, while there is a backlog, wakes the claim
// loop.
func (s *Server) runAttempt(j job) {
	r := s.runner
	defer func() {
		r.running.Add(-1)
		if r.backlog.Load() {
			s.wakeRunner()
		}
	}()
	s.metrics.attemptsRunning(1)
	defer s.metrics.attemptsRunning(-1)
	start := time.Now()
	ans, callErr := s.callVendor(r.jobCtx, j)
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	defer cancel()
	var outcome string
	var err error
	switch {
	case callErr != nil && r.jobCtx.Err() != nil:
		outcome = schema.AttemptAbandoned
		if err = s.retrySettle(ctx, j, func(ctx context.Context) error { return s.abandon(ctx, j) }); err == nil {
			r.abandoned.Add(1)
		}
	case callErr != nil:
		outcome = schema.AttemptError
		err = s.retrySettle(ctx, j, func(ctx context.Context) error { return s.settleFailure(ctx, j, callErr) })
	default:
		outcome = schema.AttemptOK
		took := time.Since(start)
		err = s.retrySettle(ctx, j, func(ctx context.Context) error { return s.settleSuccess(ctx, j, ans, took) })
	}
	s.metrics.attempt(outcome)
	if err != nil {
		s.log.Error("orch: settling an attempt failed for good; the task stays running", "task", j.task, "attempt", j.attempt, "outcome", outcome, "err", err.Error())
	}
}

// errSettled is what a settling transaction returns when its attempt
// was settled already: a retry after a commit whose answer was lost.
var errSettled = errors.New("orch: the attempt is settled already")

// retrySettle runs settle, a transaction that settles j's attempt, until
// it commits or ctx (settleTimeout) ends, backing off from 100 ms to 2 s:
// a database lost for a while (restarted, failed over, cut off) must not
// lose the attempt's outcome, and leave its task running for good. Each
// settling transaction first marks the attempt finished only if it is
// not, so a retry after a commit is a no-op.
func (s *Server) retrySettle(ctx context.Context, j job, settle func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for try := 1; ; try++ {
		err := settle(ctx)
		if err == nil || errors.Is(err, errSettled) {
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		s.log.Warn("orch: settling an attempt failed; retrying", "task", j.task, "attempt", j.attempt, "try", try, "err", err.Error())
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// finishAttempt marks j's attempt finished with outcome (and the
// columns set adds), unless it is already: then errSettled.
func finishAttempt(ctx context.Context, tx pgx.Tx, set string, args ...any) error {
	tag, err := tx.Exec(ctx, `UPDATE attempts SET finished_at = clock_timestamp(), `+set+` WHERE id = $1 AND finished_at IS NULL`, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return errSettled
	}
	return nil
}

func (s *Server) settleSuccess(ctx context.Context, j job, ans vendorAnswer, took time.Duration) error {
	cost := float64(ans.tokens) * costPerToken
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := finishAttempt(ctx, tx, `outcome = 'ok', tokens = $2, cost = $3`, j.attempt, ans.tokens, cost); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE tasks SET status = 'done', result = $2, finished_at = clock_timestamp() WHERE id = $1`,
			j.task, ans.result); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ledger (mission_id, task_id, attempt_id, runner, tokens, cost) VALUES ($1, $2, $3, $4, $5, $6)`,
			j.mission, j.task, j.attempt, s.cfg.RunnerName, ans.tokens, cost); err != nil {
			return err
		}
		return insertEvents(ctx, tx, []newEvent{{mission: j.mission, task: &j.task, kind: schema.EventTaskDone,
			data: map[string]any{"seq": j.seq, "attempt": j.attempts, "attempt_id": j.attempt, "runner": s.cfg.RunnerName,
				"tokens": ans.tokens, "cost": cost, "seconds": took.Seconds()}}}, s.metrics)
	})
}

// settleFailure books a failed attempt (a ledger row with no tokens) and
// queues the task again, or fails it after ORCH_MAX_ATTEMPTS.
func (s *Server) settleFailure(ctx context.Context, j job, callErr error) error {
	msg := callErr.Error()
	if len(msg) > 500 {
		msg = msg[:500]
	}
	final := j.attempts >= s.cfg.MaxAttempts
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := finishAttempt(ctx, tx, `outcome = 'error', error = $2`, j.attempt, msg); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO ledger (mission_id, task_id, attempt_id, runner, tokens, cost) VALUES ($1, $2, $3, $4, 0, 0)`,
			j.mission, j.task, j.attempt, s.cfg.RunnerName); err != nil {
			return err
		}
		data := map[string]any{"seq": j.seq, "attempt": j.attempts, "attempt_id": j.attempt, "runner": s.cfg.RunnerName, "error": msg}
		if final {
			if _, err := tx.Exec(ctx, `UPDATE tasks SET status = 'failed', result = $2, finished_at = clock_timestamp() WHERE id = $1`, j.task, msg); err != nil {
				return err
			}
			return insertEvents(ctx, tx, []newEvent{{mission: j.mission, task: &j.task, kind: schema.EventTaskFailed, data: data}}, s.metrics)
		}
		if _, err := tx.Exec(ctx, `UPDATE tasks SET status = 'queued', queued_at = clock_timestamp() WHERE id = $1`, j.task); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '1')`, schema.QueueChannel); err != nil {
			return err
		}
		return insertEvents(ctx, tx, []newEvent{{mission: j.mission, task: &j.task, kind: schema.EventTaskRetry, data: data}}, s.metrics)
	})
}

// abandon gives a task back to the queue when a drain cut its attempt off:
// the attempt does not count against ORCH_MAX_ATTEMPTS.
func (s *Server) abandon(ctx context.Context, j job) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := finishAttempt(ctx, tx, `outcome = 'abandoned', error = 'runner drained'`, j.attempt); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE tasks SET status = 'queued', queued_at = clock_timestamp(), attempts = greatest(attempts - 1, 0), runner = NULL WHERE id = $1`, j.task); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '1')`, schema.QueueChannel); err != nil {
			return err
		}
		return insertEvents(ctx, tx, []newEvent{{mission: j.mission, task: &j.task, kind: schema.EventTaskRequeued,
			data: map[string]any{"seq": j.seq, "attempt_id": j.attempt, "runner": s.cfg.RunnerName}}}, s.metrics)
	})
}

// vendorRequest is what a runner POSTs to ORCH_VENDOR_URL: an OpenAI-style
// chat completion request, with the orchestrator's ids alongside.
type vendorRequest struct {
	Model    string          `json:"model"`
	Messages []vendorMessage `json:"messages"`
	Metadata map[string]any  `json:"metadata"`
}

type vendorMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// callVendor POSTs j's prompt to the vendor and reads its answer; a non-2xx
// status, a timeout (ORCH_VENDOR_TIMEOUT) or a refused address is an
// error. Tokens are the answer's usage.total_tokens when it is JSON with
// one, else a quarter of the bytes of prompt and answer.
func (s *Server) callVendor(ctx context.Context, j job) (vendorAnswer, error) {
	if s.cfg.VendorURL == "" {
		return vendorAnswer{result: "ok (no ORCH_VENDOR_URL)", tokens: int64(len(j.prompt)/4 + 1)}, nil
	}
	body, _ := json.Marshal(vendorRequest{Model: "orch-echo", Messages: []vendorMessage{{Role: "user", Content: j.prompt}},
		Metadata: map[string]any{"mission_id": j.mission, "task_id": j.task, "attempt_id": j.attempt, "attempt": j.attempts, "runner": s.cfg.RunnerName}})
	ctx, cancel := context.WithTimeout(ctx, s.cfg.VendorTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.VendorURL, bytes.NewReader(body))
	if err != nil {
		return vendorAnswer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.cfg.VendorToken != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.VendorToken)
	}
	resp, err := s.vendorClient.Do(req)
	if err != nil {
		return vendorAnswer{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return vendorAnswer{}, fmt.Errorf("reading the vendor's answer: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return vendorAnswer{}, fmt.Errorf("vendor answered %s", resp.Status)
	}
	ans := vendorAnswer{tokens: int64((len(j.prompt)+len(raw))/4 + 1)}
	var usage struct {
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		} `json:"usage"`
		Choices []struct {
			Message vendorMessage `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(raw, &usage) == nil {
		if usage.Usage.TotalTokens > 0 {
			ans.tokens = usage.Usage.TotalTokens
		}
		if len(usage.Choices) > 0 {
			raw = []byte(usage.Choices[0].Message.Content)
		}
	}
	if len(raw) > resultBytes {
		raw = raw[:resultBytes]
	}
	ans.result = string(bytes.ToValidUTF8(bytes.ReplaceAll(raw, []byte{0}, nil), nil))
	return ans, nil
}

// errVendorAddr is a vendor address the orchestrator refuses to dial.
var errVendorAddr = errors.New("orch: refusing to call a vendor at a non-loopback address")

// newVendorClient returns the HTTP client for ORCH_VENDOR_URL: it dials
// only loopback addresses (and private ones with allowPrivate), checked
// after name resolution, and follows no redirects.
func newVendorClient(allowPrivate bool, slots int) *http.Client {
	return kit.LocalClient(allowPrivate, errVendorAddr, slots, 90*time.Second)
}
