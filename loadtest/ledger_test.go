package loadtest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// store is a target's store for the ledger's tests: writes land in it
// as the target's bugs let them.
type store struct {
	n       atomic.Int64
	calls   atomic.Int64
	dropped int           // every dropped-th accepted write is lost; 0 none
	twice   bool          // every write stored twice
	failing bool          // the requests fail, yet the writes are stored
	later   time.Duration // writes land this long after the answer
	err     error         // reading fails
	mu      sync.Mutex
}

func (s *store) stored(context.Context) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return 0, s.err
	}
	return s.n.Load(), nil
}

func (s *store) do(ctx context.Context) loadtest.Response {
	i := s.calls.Add(1)
	write := func() {
		if s.dropped > 0 && i%int64(s.dropped) == 0 {
			return
		}
		s.n.Add(1)
		if s.twice {
			s.n.Add(1)
		}
	}
	if s.later > 0 {
		time.AfterFunc(s.later, write)
	} else {
		write()
	}
	if s.failing && i%2 == 0 {
		return loadtest.Response{Outcome: loadtest.Timeout, Err: errors.New("timed out")}
	}
	return sleeper(time.Millisecond)(ctx)
}

// TestLedger runs 50 writes a second for 5 s against stores with and
// without bugs: the check passes a store that holds every accepted write
// (late ones included, within Settle; failed ones it completed anyway)
// and fails one that loses some or stores them twice, with the counts; a
// store it cannot read leaves the step unjudged.
func TestLedger(t *testing.T) {
	for _, tc := range []struct {
		name    string
		s       *store
		settle  time.Duration
		verdict result.Verdict
		want    string
	}{
		{"holds every write", &store{}, 0, result.Pass, ""},
		{"lands late within settle", &store{later: time.Second}, 2 * time.Second, result.Pass, ""},
		{"completes failed requests", &store{failing: true}, 0, result.Pass, ""},
		{"loses one in ten", &store{dropped: 10}, 0, result.Fail, "accepted and not held"},
		{"lands after settle", &store{later: 5 * time.Second}, 2 * time.Second, result.Fail, "accepted and not held"},
		{"lands late, no settle", &store{later: time.Second}, 0, result.Fail, "accepted and not held"},
		{"stores twice", &store{twice: true}, 0, result.Fail, "held beyond every request sent (done twice)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &loadtest.Ledger{Stored: tc.s.stored, Settle: tc.settle}
				require.NoError(t, l.Open(t.Context()))
				res := run(t, loadtest.Scenario{
					Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "write", Weight: 1, Do: l.Wrap(tc.s.do, nil)}}},
					Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 50, Hold: 5 * time.Second}}},
					Checks:   []loadtest.Check{l.LosesNoAcceptedWork()},
					Analyze: func(*loadtest.Result) ([]result.Finding, error) {
						f, err := l.Finding(context.Background())
						return []result.Finding{f}, err
					},
				})
				sr := res.Steps[0]
				assert.Equal(t, tc.verdict, sr.Verdict, "%v %v", sr.Violations, sr.Unjudged)
				// The run's finding tells the same: the accepted writes
				// missing, none when nothing was lost.
				require.Len(t, res.Findings, 1)
				f := res.Findings[0]
				assert.Equal(t, "accepted work lost", f.Name)
				if tc.want == "accepted and not held" {
					assert.Positive(t, f.Value, f.Text)
				} else {
					assert.Zero(t, f.Value, f.Text)
				}
				if tc.s.twice {
					assert.Contains(t, f.Text, "done twice")
				}
				t.Logf("finding: %s", f.Text)
				if tc.want != "" {
					require.Len(t, sr.Violations, 1)
					assert.Contains(t, sr.Violations[0], tc.want)
					t.Logf("%s", sr.Violations[0])
				}
			})
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &store{}
			l := &loadtest.Ledger{Stored: s.stored}
			require.NoError(t, l.Open(t.Context()))
			s.mu.Lock()
			s.err = errors.New("connection refused")
			s.mu.Unlock()
			res := run(t, loadtest.Scenario{
				Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "write", Weight: 1, Do: l.Wrap(s.do, nil)}}},
				Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 50, Hold: 2 * time.Second}}},
				Checks:   []loadtest.Check{l.LosesNoAcceptedWork()},
			})
			assert.Equal(t, result.Invalid, res.Steps[0].Verdict)
			assert.Contains(t, res.Steps[0].Unjudged[0], "could not read what the target holds: connection refused")
		})
	})
	t.Run("not opened", func(t *testing.T) {
		s := &store{}
		l := &loadtest.Ledger{Stored: s.stored}
		sc := loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "write", Weight: 1, Do: l.Wrap(s.do, nil)}}},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 50, Hold: 2 * time.Second}}},
			Checks:   []loadtest.Check{l.LosesNoAcceptedWork()},
		}
		assert.ErrorContains(t, sc.Validate(), "call Ledger.Open after seeding")
		assert.ErrorContains(t, (&loadtest.Ledger{}).Open(t.Context()), "Ledger.Stored is nil")
	})
}
