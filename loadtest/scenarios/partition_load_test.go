//go:build load

package scenarios

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// TestLoad_Partition cuts the orchestrator's runners off from PostgreSQL
// in the middle of its missions: MISSIONS missions of TASKS tasks, at most
// PARALLEL of a mission's at a time, run on RUNNERS runners against a
// vendor that answers after VENDOR; AT into the hold, once the missions
// are approved and their first attempts are out at the vendor, the
// network between the runners and PostgreSQL is cut for CUT
// (fixtures.WithNetworkFaults: Toxiproxy on the runners' database link;
// nothing they send arrives, nothing comes back), then heals. The API,
// on a link of its own, serves the readers throughout.
//
// Attempts that end during the cut cannot be settled, and the claims
// cannot be made, until the network heals; every connection the cut held
// is closed then. The orchestrator must carry on from where it was: every
// mission finishes within the hold, no task is still running at its end
// (an attempt whose runner lost it), and no reader's request fails. The report adds the
// tasks' attempts and how many the runners left running.
//
// Knobs: MISSIONS, TASKS, PARALLEL, RUNNERS, SLOTS, READERS, THINK,
// VENDOR, HOLD, AT, CUT.
func TestLoad_Partition(t *testing.T) {
	notDeployed(t, "cuts its own stack's network")
	k := loadtest.NewKnobs(t)
	missions, tasks := k.Int("MISSIONS", "40", "12", 1), k.Int("TASKS", "6", "6", 1)
	parallel := k.Int("PARALLEL", "2", "2", 1)
	runners, slots := k.Int("RUNNERS", "2", "2", 1), k.Int("SLOTS", "64", "32", 1)
	readers := k.Int("READERS", "10", "4", 0)
	think := k.Duration("THINK", "1s", "500ms")
	vendor := k.Duration("VENDOR", "3s", "2s")
	hold := k.Duration("HOLD", "60s", "25s")
	at, cut := k.Duration("AT", "5s", "2s"), k.Duration("CUT", "10s", "4s")

	stack := startOrch(t, 0, runners, slots, vendor, fixtures.WithNetworkFaults())
	ids := createMissions(t, stack, missions, tasks, parallel)
	o := stack.ClientOptions()
	o.Timeout, o.MaxConnsPerHost = time.Minute, missions+readers+10
	hc, err := httpc.New(o)
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	run, err := newOrchRun(stack, hc, ids, readers, think)
	require.NoError(t, err)
	db, err := pgxpool.New(t.Context(), stack.DatabaseURL)
	require.NoError(t, err)
	t.Cleanup(db.Close)

	var stranded, attempts, retried int64
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Workload: run.users(), Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: float64(run.level()), Hold: hold}}},
		Faults: []loadtest.Fault{stack.Link(fixtures.LinkDatabase, "orch-runner").CutFor(1, at, cut)},
		Checks: []loadtest.Check{run.allFinished(), loadtest.FailuresBelow("", 0.001), stack.ComponentsUp(),
			loadtest.Custom("leaves no task running", func(*loadtest.StepResult) error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := db.QueryRow(ctx, `SELECT
						(SELECT count(*) FROM tasks WHERE status = 'running'),
						(SELECT count(*) FROM attempts),
						(SELECT count(*) FROM attempts WHERE outcome IS DISTINCT FROM 'ok')`).Scan(&stranded, &attempts, &retried); err != nil {
					return fmt.Errorf("count the tasks: %w", err)
				}
				if stranded > 0 {
					return fmt.Errorf("%d tasks still running at the hold's end, vendor calls of %v: their runners lost them", stranded, vendor)
				}
				return nil
			})},
		SeriesEvery: 500 * time.Millisecond,
		Headline:    loadtest.AllRequests,
		Params:      k.Params(), Drain: 5 * time.Second,
		Analyze: func(res *loadtest.Result) ([]result.Finding, error) {
			out, err := orchFindings(res)
			return append(out, result.Finding{Name: "attempts",
				Text: fmt.Sprintf("%d attempts for %d tasks; %d did not end ok; %d tasks still running at the end", attempts, missions*tasks, retried, stranded)}), err
		},
	}))
	for _, f := range res.Findings {
		t.Log(f)
	}
	require.Len(t, res.Steps, 1)
	require.Len(t, res.Steps[0].Faults, 1)
	f := res.Steps[0].Faults[0]
	t.Logf("%s", f)
	assert.True(t, f.Applied(), "the cut: %s", f.Error)
	// The missions waited out the cut: their waves of vendor calls, and
	// most of the cut, passed between the approval and their end.
	if m := res.Steps[0].Kind(kindMissionDone); assert.NotNil(t, m, "no mission ended") {
		waves := time.Duration((tasks+parallel-1)/parallel) * vendor
		assert.Greater(t, m.Latency.P50, waves+cut*8/10, "a cut of the runners' database link that did not hold up the missions: was it on their link?")
	}
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}
