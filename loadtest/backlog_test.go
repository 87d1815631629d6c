package loadtest_test

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// pool stands in for a client's connection pool of len(slots) connections
// in front of a target that answers in service: a request waits for a
// free connection (Response.Queued), then for the answer.
type pool struct {
	slots   chan struct{}
	service time.Duration
}

func (p *pool) do(ctx context.Context) loadtest.Response {
	t0 := time.Now()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return loadtest.Response{Outcome: loadtest.Timeout, Err: ctx.Err(), Queued: time.Since(t0)}
	}
	defer func() { <-p.slots }()
	queued := time.Since(t0)
	select {
	case <-time.After(p.service):
		return loadtest.Response{Outcome: loadtest.OK, Queued: queued}
	case <-ctx.Done():
		return loadtest.Response{Outcome: loadtest.Timeout, Err: ctx.Err(), Queued: queued}
	}
}

// Requests that queue in the generator's pool are the harness's only when
// the target answers quickly: a pool too small for the load voids the
// step; a pool full because the target is past its knee — every
// connection waiting on slow answers — is the target's breach, with the
// latency its users saw.
func TestQueueIsTheTargetsBacklogWhenItAnswersSlowly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		slots   int
		service time.Duration
		rate    float64
		want    result.Verdict
		reason  string // a substring of the step's reasons or backlog
	}{
		// 2 connections, 10 ms answers: 200/s at most, 400/s asked.
		{"small pool, quick target", 2, 10 * time.Millisecond, 400, result.Invalid, "a client's connection pool is smaller than the load needs"},
		// 400 connections, 2 s answers: 200/s at most, 300/s asked — the
		// PocketBase-like case: a big pool, all of it waiting.
		{"big pool, target past its knee", 400, 2 * time.Second, 300, result.Fail, "the queue is the target's backlog"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &pool{slots: make(chan struct{}, tc.slots), service: tc.service}
				res := run(t, loadtest.Scenario{
					Workload:  &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: p.do}}},
					Plan:      loadtest.Levels(0, 10*time.Second, tc.rate),
					Checks:    []loadtest.Check{loadtest.LatencyBelow("get", 95, time.Second)},
					SelfCheck: loadtest.SelfCheck{MaxCPU: -1},
					Drain:     5 * time.Second,
				})
				require.Len(t, res.Steps, 1)
				s := res.Steps[0]
				why := strings.Join(append(s.Self.Reasons, s.Self.Backlog), "\n")
				assert.Equal(t, tc.want, s.Verdict, "%s\nviolations: %q", why, s.Violations)
				assert.Contains(t, why, tc.reason)
				assert.Greater(t, s.Self.QueuedP99, 10*time.Millisecond, "requests queued in both")
				if tc.want == result.Fail {
					assert.Contains(t, strings.Join(s.Violations, "\n"), "p95 of get < 1s")
					assert.ErrorContains(t, res.Err(), "the queue is the target's backlog", "the verdict says why")
				}
			})
		})
	}
}
