package loadtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// fakeDB is a database that counts the statements requests run, and a
// StatementSource over them.
type fakeDB struct {
	mu    sync.Mutex
	calls map[int64]int64
	fail  error
}

func (d *fakeDB) run(id int64, n int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.calls == nil {
		d.calls = map[int64]int64{}
	}
	d.calls[id] += int64(n)
}

func (d *fakeDB) Sample(context.Context, time.Time) ([]loadtest.Measurement, error) { return nil, nil }

func (d *fakeDB) Statements(context.Context) ([]result.Statement, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail != nil {
		return nil, d.fail
	}
	var out []result.Statement
	for id, n := range d.calls {
		out = append(out, result.Statement{ID: id, Query: fmt.Sprint("SELECT ", id), Calls: n, Rows: n, TotalMS: float64(n) / 10})
	}
	return out, nil
}

// The run counts the statements of every hold from its StatementSource:
// a dashboard that runs one query per tool (20 tools, an N+1) reads as
// about 21 statements per dashboard request, and half the requests
// dashboards as about 10.5 per request.
func TestStatementsPerHold(t *testing.T) {
	for _, tc := range []struct {
		name   string
		weight float64 // of the dashboard, against a call that runs one statement
		perOK  float64
	}{
		{"dashboards only", 1, 21},
		{"half dashboards", 0.5, 0.5*21 + 0.5*1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				db := &fakeDB{}
				dashboard := func(ctx context.Context) loadtest.Response {
					db.run(1, 1)  // the tools
					db.run(2, 20) // each tool's usage, one query a tool
					return sleeper(time.Millisecond)(ctx)
				}
				call := func(ctx context.Context) loadtest.Response {
					db.run(3, 1)
					return sleeper(time.Millisecond)(ctx)
				}
				mix := []loadtest.Kind{{Name: "dashboard", Weight: tc.weight, Do: dashboard}}
				if tc.weight < 1 {
					mix = append(mix, loadtest.Kind{Name: "call", Weight: 1 - tc.weight, Do: call})
				}
				res, err := loadtest.Run(t.Context(), loadtest.Scenario{
					Workload: &loadtest.Arrivals{Mix: mix},
					Plan:     loadtest.Levels(time.Second, 10*time.Second, 20, 40),
					Samplers: []loadtest.Sampler{db},
				})
				require.NoError(t, err)
				require.Len(t, res.Steps, 2)
				for _, s := range res.Steps {
					q := s.Queries
					require.NotNil(t, q, "step %d", s.Index+1)
					// The mix draws each arrival's kind: the statements the
					// hold's requests ran, from what they were.
					dash, calls := float64(s.Kind("dashboard").Outcomes[loadtest.OK]), 0.0
					if k := s.Kind("call"); k != nil {
						calls = float64(k.Outcomes[loadtest.OK])
					}
					want := (21*dash + calls) / (dash + calls)
					assert.InEpsilon(t, tc.perOK, want, 0.15, "step %d: the mix as drawn", s.Index+1)
					assert.InEpsilon(t, want, q.PerOK, 0.03, "step %d", s.Index+1)
					assert.InEpsilon(t, 21*dash+calls, float64(q.Calls), 0.03, "step %d: the hold's statements, not the ramp's", s.Index+1)
					require.NotEmpty(t, q.Top)
					assert.EqualValues(t, 2, q.Top[0].ID, "the N+1 is the busiest")
				}
				assert.Contains(t, res.Markdown(), "## Queries")
			})
		})
	}
}

// Without a source, or in a sharded run, nothing is counted; a source that
// fails leaves the step uncounted and says so once a step.
func TestStatementsNotCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := &fakeDB{fail: errors.New("pg_stat_statements must be loaded via shared_preload_libraries")}
		var mu sync.Mutex
		var logs []string
		res, err := loadtest.Run(t.Context(), loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:     loadtest.Levels(time.Second, 2*time.Second, 10, 20),
			Samplers: []loadtest.Sampler{db},
			Logf: func(f string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, fmt.Sprintf(f, a...))
			},
		})
		require.NoError(t, err)
		for _, s := range res.Steps {
			assert.Nil(t, s.Queries)
		}
		mu.Lock()
		n := 0
		for _, l := range logs {
			if strings.Contains(l, "statements not counted: pg_stat_statements must be loaded") {
				n++
			}
		}
		mu.Unlock()
		assert.Equal(t, 2, n, "once a step: %q", logs)
		assert.NotContains(t, res.Markdown(), "## Queries")

		res, err = loadtest.Run(t.Context(), loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:     loadtest.Levels(time.Second, 2*time.Second, 10),
		})
		require.NoError(t, err)
		assert.Nil(t, res.Steps[0].Queries, "no source")
	})
}
