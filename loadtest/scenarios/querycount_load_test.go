//go:build load

package scenarios

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// TestLoad_QueryCount counts queries per request, the method by which seed
// 002 found its causes: the relay's dashboard on PostgreSQL, as built and
// with its N+1 fault (RELAY_FAULT=dashboard-n-plus-one: the tools listed,
// then one query per tool), two relays side by side, each seeded with
// USERS users and ROWS usage rows. Dashboard views are offered at RATE/s in
// TRIALS interleaved A/B trials per arm of RAMP + HOLD. Every hold counts
// the statements PostgreSQL ran (pg_stat_statements, which fixtures load on
// both backends): each trial's result shows them per successful request,
// with the busiest, and the A/B compares queries/ok with its other figures.
//
// Bars: the fault reads as one more statement per tool the dashboard
// shows (±0.5 a request), and the A/B calls the build with it regressed,
// queries/ok among the figures that decide.
//
// Knobs: RATE, RAMP, HOLD, TRIALS, USERS, ROWS, LOADTEST_BACKEND.
func TestLoad_QueryCount(t *testing.T) {
	notDeployed(t, "starts its target with and without a planted fault")
	besideOthers(t)
	k := loadtest.NewKnobs(t)
	rate := k.Float("RATE", "50", "20", 1)
	ramp, hold := k.Duration("RAMP", "2s", "250ms"), k.Duration("HOLD", "10s", "1500ms")
	// Six trials an arm: among the A/B's primary figures a complete
	// separation is significant from six (Holm, family α 0.05).
	trials := k.Int("TRIALS", "8", "6", 2)
	users, rows := k.Int("USERS", "50", "10", 1), k.Int("ROWS", "100000", "5000", 1)

	type arm struct {
		stack *fixtures.Stack
		do    func(context.Context) loadtest.Response
		tools int // on the dashboard of user 0's workspace
	}
	start := func(env map[string]string) *arm {
		relay := relayload.Service()
		relay.Pprof = ""
		stack := fixtures.Start(t, fixtures.WithTarget(relay), fixtures.WithDatabase(fixtures.Postgres), fixtures.WithoutProxy(),
			fixtures.WithUpstreamBehavior(stubUpstream(time.Millisecond)), fixtures.WithTargetEnv(env))
		pop := populate(t, k, stack, users, rows, 1)
		o := stack.ClientOptions()
		o.Timeout, o.MaxConnsPerHost = 10*time.Second, 64
		hc, err := httpc.New(o)
		require.NoError(t, err)
		t.Cleanup(hc.Close)
		url := stack.URL + "/api/dashboard?window=720h"
		req, err := hc.Prepare("GET", url, []httpc.Header{{Name: "Authorization", Value: "Bearer " + pop.TokenOf(0)}}, nil)
		require.NoError(t, err)
		// What the dashboard shows: its tools are the N of the N+1.
		r, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
		require.NoError(t, err)
		r.Header.Set("Authorization", "Bearer "+pop.TokenOf(0))
		resp, err := stack.HTTPClient.Do(r)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var page struct {
			Tools []json.RawMessage `json:"tools"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
		return &arm{stack: stack, do: hc.Func(req), tools: len(page.Tools)}
	}
	base := start(map[string]string{"RELAY_METRICS": "0"})
	n1 := start(map[string]string{"RELAY_METRICS": "0", "RELAY_FAULT": "dashboard-n-plus-one"})
	require.Equal(t, base.tools, n1.tools, "both relays seeded alike")
	require.Greater(t, base.tools, 2, "a dashboard of several tools, or an N+1 is no different")

	var mu sync.Mutex
	perOK := map[ab.Arm][]float64{}
	reps, err := ab.Run(t.Context(), ab.Config{Trials: trials, MaxTrials: trials + 2, Seed: 1, Logf: t.Logf},
		func(ctx context.Context, which ab.Arm, i int) ([]*loadtest.Result, error) {
			a := base
			if which == ab.B {
				a = n1
			}
			res, err := loadtest.Run(ctx, a.stack.Scenario(loadtest.Scenario{
				Name:        "TestLoad_QueryCount",
				Workload:    &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: relayload.KindDashboard, Weight: 1, Do: a.do}}, MaxInFlight: 64},
				Plan:        loadtest.Levels(ramp, hold, rate),
				Checks:      []loadtest.Check{loadtest.FailuresBelow(relayload.KindDashboard, 0.001), a.stack.ComponentsUp()},
				SampleEvery: min(250*time.Millisecond, hold/4),
				Params:      k.Params(), Drain: 10 * time.Second,
			}))
			if err != nil {
				return nil, err
			}
			for _, s := range res.Steps {
				require.NotNil(t, s.Queries, "PostgreSQL counts statements on the %s backend", a.stack.Backend)
				mu.Lock()
				perOK[which] = append(perOK[which], s.Queries.PerOK)
				mu.Unlock()
				if i == 0 {
					t.Logf("arm %s, trial 1:\n%s", which, queriesTable(res))
				}
			}
			return []*loadtest.Result{res}, nil
		})
	require.NoError(t, err)
	require.Len(t, reps, 1)
	rep := reps[0]
	writeABReport(t, rep)

	a, b := median(perOK[ab.A]), median(perOK[ab.B])
	t.Logf("statements per dashboard view: %.2f as built, %.2f with the N+1 fault; the dashboard shows %d tools", a, b, base.tools)
	assert.InDelta(t, float64(base.tools), b-a, 0.5, "the N+1 runs one more statement per tool")
	assert.Equal(t, ab.Regressed, rep.Verdict, rep.Reason)
	assert.Contains(t, rep.Reason, "queries/ok", "the statements per request decide")
}

// queriesTable is a result's Markdown from its queries on.
func queriesTable(res *loadtest.Result) string {
	md := res.Markdown()
	if i := strings.Index(md, "## Queries"); i >= 0 {
		md = md[i:]
	}
	return md
}

// median is the median of xs; NaN when empty.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
