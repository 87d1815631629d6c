//go:build load

package scenarios

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/deskload"
	"github.com/headroom-dev/headroom/examples/desk/deskseed"
	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/sse"
	"github.com/headroom-dev/headroom/mockupstream"
)

// TestLoad_Faults pauses the relay's PostgreSQL in the middle of a hold
// of tool calls at RATE per second — AT into the hold, for PAUSE — as a
// stalled disk or a long checkpoint would: the relay records every
// call's usage there, so its calls wait on the database. A second step
// has the mock upstream reset RESETS (20%) of its connections for as
// long; a third stops PostgreSQL for as long and starts it again, as a
// restart or a failover does, breaking every connection to it. Each
// step reports when the load saw its fault, how long after the clear
// the relay served as before (RecoversWithin RECOVER), and what failed
// meanwhile: a call the client gave up on after TIMEOUT counts as
// failed. A ledger (loadtest.Ledger) counts the calls the relay answered
// as done against the usage rows it stored: none may be lost. The relay
// must stay up throughout.
//
// Three relays, one after the other: as built (service=steady), which
// must pass every step; and two with a planted bug, each of which its
// check must catch where latency and errors alone would not tell it
// from a slow database. service=lossy (RELAY_FAULT=record-async:500ms)
// answers before it records, and drops a record the paused database
// does not take within 500 ms: the ledger must find the loss.
// service=stuck (RELAY_FAULT=db-no-reconnect) dials its pool's
// connections once and never again: once PostgreSQL restarted it fails
// every call, and RecoversWithin must say so.
//
// Knobs: RATE, RAMP, HOLD, AT, PAUSE, TIMEOUT, RECOVER, RESETS.
func TestLoad_Faults(t *testing.T) {
	notDeployed(t, "pauses its stack's database")
	k := loadtest.NewKnobs(t)
	rate := k.Float("RATE", "50", "20", 1)
	ramp, hold := k.Duration("RAMP", "2s", "1s"), k.Duration("HOLD", "40s", "14s")
	at, pause := k.Duration("AT", "10s", "3s"), k.Duration("PAUSE", "5s", "3s")
	timeout, recover := k.Duration("TIMEOUT", "2s", "2s"), k.Duration("RECOVER", "5s", "5s")
	resets := k.Float("RESETS", "0.2", "0.2", 0)

	// The faults of a cell's steps, in order, one a step.
	paused := func(s *fixtures.Stack) loadtest.Fault { return s.Component("postgres").PausedFor(1, at, pause) }
	resetting := func(s *fixtures.Stack) loadtest.Fault {
		return s.UpstreamFaulty(2, at, pause, mockupstream.Faults{Reset: resets})
	}
	restarted := func(step int) func(s *fixtures.Stack) loadtest.Fault {
		return func(s *fixtures.Stack) loadtest.Fault { return s.Component("postgres").StoppedFor(step, at, pause) }
	}
	cell := func(t *testing.T, env map[string]string, faults ...func(*fixtures.Stack) loadtest.Fault) *loadtest.Result {
		relay := relayload.Service()
		relay.Pprof = ""
		stack := fixtures.Start(t, fixtures.WithTarget(relay), fixtures.WithDatabase(fixtures.Postgres), fixtures.WithoutProxy(),
			fixtures.WithUpstreamBehavior(stubUpstream(5*time.Millisecond)), fixtures.WithTargetEnv(env))
		pop := populate(t, k, stack, studyUsers, 0, 1)
		o := stack.ClientOptions()
		inFlight := int(rate*(timeout+time.Second).Seconds()) + 50
		o.Timeout, o.MaxConnsPerHost = timeout, inFlight
		hc, err := httpc.New(o)
		require.NoError(t, err)
		t.Cleanup(hc.Close)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		do, err := rateRequests(ctx, hc, stack.URL, pop.TokenOf, studyUsers, mcp.KindCallTool, "")
		require.NoError(t, err)
		db, err := pgxpool.New(t.Context(), stack.DatabaseURL)
		require.NoError(t, err)
		t.Cleanup(db.Close)
		ledger := &loadtest.Ledger{Stored: func(ctx context.Context) (n int64, err error) {
			err = db.QueryRow(ctx, `SELECT count(*) FROM usage`).Scan(&n)
			return n, err
		}}
		require.NoError(t, ledger.Open(ctx))
		var planned []loadtest.Fault
		for _, f := range faults {
			planned = append(planned, f(stack))
		}

		s := stack.Scenario(loadtest.Scenario{
			Name:        t.Name(),
			Workload:    &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: mcp.KindCallTool, Weight: 1, Do: ledger.Wrap(do, nil)}}, MaxInFlight: inFlight},
			Plan:        loadtest.Levels(ramp, hold, slices.Repeat([]float64{rate}, len(faults))...),
			Faults:      planned,
			SeriesEvery: 500 * time.Millisecond,
			Checks:      []loadtest.Check{loadtest.RecoversWithin(recover), ledger.LosesNoAcceptedWork(), stack.ComponentsUp()},
			Params:      k.Params(),
			Drain:       timeout + 2*time.Second,
			Analyze: func(*loadtest.Result) ([]result.Finding, error) {
				f, err := ledger.Finding(context.Background())
				return []result.Finding{f}, err
			},
		})
		var res *loadtest.Result
		if env["RELAY_FAULT"] == "" {
			res = loadtest.Test(t, s)
		} else {
			// The lossy relay fails on purpose: run, not judged as the test.
			res, err = loadtest.Run(t.Context(), s)
			require.NoError(t, err)
		}
		require.NotEmpty(t, res.Steps) // the lossy relay's run ends at its failed step
		for _, f := range res.Findings {
			t.Logf("%s: %s", f.Name, f.Text)
		}
		for _, sr := range res.Steps {
			require.Len(t, sr.Faults, 1)
			f := sr.Faults[0]
			t.Logf("step %d: %s", sr.Index+1, f)
			// The relay writes every call's usage to the database and
			// forwards every call upstream: a fault it did not feel
			// missed (or the relay stopped recording, or retries
			// upstream resets it should report).
			assert.True(t, f.Detected, "the relay's calls did not feel it: %s", f)
		}
		return res
	}
	t.Run("service=steady", func(t *testing.T) {
		res := cell(t, map[string]string{}, paused, resetting, restarted(3))
		assert.Len(t, res.Steps, 3)
		if err := res.Err(); err != nil {
			t.Error(err)
		}
	})
	t.Run("service=lossy", func(t *testing.T) {
		res := cell(t, map[string]string{"RELAY_FAULT": "record-async:500ms"}, paused)
		s := res.Steps[0]
		var lost []string
		for _, v := range s.Violations {
			if strings.HasPrefix(v, "loses no accepted work: ") {
				lost = append(lost, v)
			}
		}
		t.Logf("%v", s.Violations)
		assert.Len(t, lost, 1, "the relay answering before it records loses calls the paused database did not take: %v", s.Violations)
	})
	t.Run("service=stuck", func(t *testing.T) {
		res := cell(t, map[string]string{"RELAY_FAULT": "db-no-reconnect"}, restarted(1))
		sr := res.Steps[0]
		f := sr.Faults[0]
		assert.True(t, f.Unrecovered, "a relay that never dials PostgreSQL again fails every call after the restart: %s", f)
		assert.Contains(t, []result.Verdict{result.Fail, result.Invalid}, sr.Verdict)
		assert.True(t, slices.ContainsFunc(sr.Violations, func(v string) bool {
			return strings.HasPrefix(v, "recovers from every fault within ")
		}), "the recovery check must fail it: %v", sr.Violations)
		t.Logf("%s: violated %v; invalid: %v", sr.Verdict, sr.Violations, sr.InvalidReasons())
	})
}

// TestLoad_ReplicaLost kills one of the desk's two web replicas behind
// Caddy (the helpdesk's scale setup: two web replicas and a worker,
// through PgBouncer) AT into a hold of AGENTS agents, for the rest of the
// run — a node lost. The agents whose live streams it held reconnect;
// the others' requests go on. Twice: with Caddy failing over
// (fixtures.WithFailover: a request its replica cannot take is tried on
// the other, a failed replica left out), where the desk must serve as
// before within RECOVER of the kill, and the streams it dropped connect
// again (sse.StreamsResume); and without (round robin only, the stack as the seed
// describes it), where half the requests keep going to the lost replica
// and the recovery check must fail.
//
// Knobs: AGENTS, RAMP, HOLD, AT, PACE, RECOVER.
func TestLoad_ReplicaLost(t *testing.T) {
	notDeployed(t, "kills one of its stack's replicas")
	k := loadtest.NewKnobs(t)
	agents := k.Float("AGENTS", "200", "40", 1)
	ramp, hold := k.Duration("RAMP", "20s", "3s"), k.Duration("HOLD", "60s", "20s")
	at := k.Duration("AT", "20s", "5s")
	pace := k.Float("PACE", "1", "0.1", 0.001)
	recover := k.Duration("RECOVER", "10s", "10s")

	cell := func(t *testing.T, failover bool) *loadtest.Result {
		var extra []fixtures.Option
		if failover {
			extra = append(extra, fixtures.WithFailover(5*time.Second))
		}
		stack := startDesk(t, "scale", int(agents), extra...)
		spec := deskseed.Short
		spec.Secret = []byte("helpdesk")
		pop := seedDesk(t, stack, spec)
		o := stack.ClientOptions()
		o.Timeout, o.MaxConnsPerHost = 10*time.Second, 3*int(agents)
		hc, err := httpc.New(o)
		require.NoError(t, err)
		t.Cleanup(hc.Close)
		w, err := (&deskload.Agents{URL: stack.URL, HTTP: hc, Token: pop.Token, Agents: spec.Agents,
			Client: deskload.Live, Pace: pace}).Users()
		require.NoError(t, err)
		names := targetNames(stack)
		require.Len(t, names, 2)
		s := stack.Scenario(loadtest.Scenario{
			Name:        t.Name(),
			Workload:    w,
			Plan:        loadtest.Levels(ramp, hold, agents),
			Faults:      []loadtest.Fault{stack.Component(names[1]).Killed(1, at)},
			SeriesEvery: 500 * time.Millisecond,
			Checks:      []loadtest.Check{loadtest.RecoversWithin(recover), sse.StreamsResume(), stack.ComponentsUp()},
			Headline:    loadtest.AllRequests,
			Params:      k.Params(),
			Drain:       11 * time.Second,
		})
		var res *loadtest.Result
		if failover {
			res = loadtest.Test(t, s)
		} else {
			// Without failover the desk cannot recover: run, not judged as the test.
			res, err = loadtest.Run(t.Context(), s)
			require.NoError(t, err)
		}
		require.Len(t, res.Steps, 1)
		require.Len(t, res.Steps[0].Faults, 1)
		t.Logf("%s", res.Steps[0].Faults[0])
		return res
	}
	t.Run("failover=on", func(t *testing.T) {
		res := cell(t, true)
		if err := res.Err(); err != nil {
			t.Error(err)
		}
		// The lost replica held about half the agents' streams: they
		// dropped, and connected again, through Caddy, to the other.
		var dropped int64
		if k := res.Steps[0].Kind(sse.KindStream); k != nil {
			dropped = k.Outcomes[loadtest.TransportError] + k.Outcomes[loadtest.ProtocolError]
		}
		t.Logf("streams dropped in the hold: %d of %g agents", dropped, agents)
		assert.GreaterOrEqual(t, float64(dropped), agents/4, "the lost replica's streams did not drop: was it serving any?")
	})
	t.Run("failover=off", func(t *testing.T) {
		res := cell(t, false)
		f := res.Steps[0].Faults[0]
		assert.True(t, f.Detected && f.Unrecovered, "round robin over a lost replica keeps failing half the requests: %s", f)
		// The recovery check fails it; a doubt about the host (a busy
		// neighbour) may make the breach invalid rather than a fail,
		// which does not change what the check said.
		sr := res.Steps[0]
		assert.Contains(t, []result.Verdict{result.Fail, result.Invalid}, sr.Verdict)
		assert.True(t, slices.ContainsFunc(sr.Violations, func(v string) bool {
			return strings.HasPrefix(v, "recovers from every fault within ")
		}), "the recovery check must fail it: %v", sr.Violations)
		t.Logf("%s: violated %v; invalid: %v", sr.Verdict, sr.Violations, sr.InvalidReasons())
	})
}
