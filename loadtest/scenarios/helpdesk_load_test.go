//go:build load

package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/deskload"
	"github.com/headroom-dev/headroom/examples/desk/deskseed"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/prom"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// TestLoad_Helpdesk is the helpdesk's agent ladder (seed 004): how many
// agents can work at once on one desk server (setup=standard) or on two
// web servers, a worker and PgBouncer (setup=scale), before they notice —
// 95% of all requests no longer within a few hundred milliseconds, or
// requests failing. The desk (examples/desk) holds the seed's data set
// (deskseed.Full: 200,000 cases over two years, 1,000,000 messages,
// 100,000 contacts, 20,000 accounts, 200 units, 3,000 agents) behind Caddy
// over HTTPS; outgoing mail goes to the mock upstream. Each modeled agent
// (deskload.Agents) opens its inbox on one of three views, holds the live
// stream and counts its sidebar again when told, opens a case every 5 to
// 20 s, stays 30 to 120 s with a heartbeat every 20 s, notes 1 case in 10,
// replies 1 in 33 and searches before 1 in 10. The ladder is the seed's:
// an idle row (the stack seeded and at rest, no agent), then 250, 500,
// 1,000, 2,000 and 3,000 agents, each ramped over 60 s and held 180 s;
// errors include any answer slower than 30 s. The report's table is the
// seed's: agents, requests/s, median, 95% and 99% of every request
// together, errors, and each container's CPU and memory (the desk's, the
// worker's, PostgreSQL's, PgBouncer's and Caddy's). Then the top step
// again with the older client that polls every minute (client=poll),
// for the live-vs-poll request rate. A lean -short run, make test's, runs
// the scale setup only (LOADTEST_MATRIX=full both).
//
// Bars: p95 of all requests < P95 (300 ms), failures under 0.1%, every
// agent's stream held and healthy, every component up. -short keeps the
// correctness bars only.
//
// Knobs: SETUP (standard, scale or all), AGENTS, RAMP, HOLD, PACE (a
// factor on every think time), DATA (full or short) and each of its
// sizes over it (UNITS, ACCOUNTS, CONTACTS, CASES, MESSAGES), POLL (top: the top
// step with the poll client; off), P95, SEED, LOADTEST_BACKEND. -short runs
// idle, 20 and 40 agents at a tenth of the think times on the small data
// set.
func TestLoad_Helpdesk(t *testing.T) {
	besideOthers(t)
	runs := newVariants()
	setups := helpdeskSetups(t)
	for _, setup := range setups {
		t.Run("setup="+setup, func(t *testing.T) { helpdesk(t, setup, runs) })
	}
	helpdeskTables(t, runs, setups)
}

// helpdeskSetups returns the setups SETUP names: standard, scale, or all
// (the default; a lean -short run, scale only); against a deployed
// system, that one ("deployed").
func helpdeskSetups(t *testing.T) []string {
	if fixtures.Deployed() {
		return []string{"deployed"} // its processes are its own
	}
	switch v := os.Getenv("SETUP"); v {
	case "standard", "scale":
		return []string{v}
	case "":
		if lean(t) {
			// The scale setup has every part the standard one has, and
			// the replicas, the worker and PgBouncer besides.
			t.Logf("lean -short run: setup=scale only (LOADTEST_MATRIX=full or SETUP=all for both)")
			return []string{"scale"}
		}
		return []string{"standard", "scale"}
	case "all":
		return []string{"standard", "scale"}
	default:
		t.Fatalf("SETUP=%q: give standard, scale or all", v)
		return nil
	}
}

func helpdesk(t *testing.T, setup string, runs *variants) {
	k := loadtest.NewKnobs(t)
	agents := k.Levels("AGENTS", "idle,250,500,1000,2000,3000", "idle,20,40")
	ramp, hold := k.DurationOrZero("RAMP", "60s", "3s"), k.Duration("HOLD", "180s", "10s")
	pace := k.Float("PACE", "1", "0.1", 0.001)
	bar := k.Duration("P95", "300ms", "300ms")
	seed := k.Uint("SEED", "1", "1")
	poll := k.String("POLL", "top", "top")
	if poll != "top" && poll != "off" {
		t.Fatalf("knob POLL=%q: give top or off", poll)
	}
	spec := deskseed.Full
	if data := k.String("DATA", "full", "short"); data == "short" {
		spec = deskseed.Short
	} else if data != "full" {
		t.Fatalf("knob DATA=%q: give full or short", data)
	}
	// The data set's sizes, each its own knob over DATA's.
	for _, n := range []struct {
		knob  string
		field *int
	}{{"UNITS", &spec.Units}, {"ACCOUNTS", &spec.Accounts}, {"CONTACTS", &spec.Contacts}, {"CASES", &spec.Cases}, {"MESSAGES", &spec.Messages}} {
		d := strconv.Itoa(*n.field)
		*n.field = k.Int(n.knob, d, d, 1)
	}
	spec.Secret = []byte("helpdesk")
	if err := spec.Validate(); err != nil {
		t.Fatalf("knobs DATA, UNITS, ACCOUNTS, CONTACTS, CASES, MESSAGES: %v", err)
	}
	top := int(agents[len(agents)-1])
	k.Set("setup", setup)

	stack := startDesk(t, setup, top)
	pop := seedDesk(t, stack, spec)
	k.Set("population", fmt.Sprintf("%d units, %d agents, %d cases, %d messages", spec.Units, spec.Agents, spec.Cases, spec.Messages))

	// Two connections per agent at the top step (its work and a recount)
	// besides its stream: agents never queue for one.
	o := stack.ClientOptions()
	o.Timeout, o.MaxConnsPerHost = time.Minute, 2*top+top/10
	hc, err := httpc.New(o)
	require.NoError(t, err)
	t.Cleanup(hc.Close)

	run := func(t *testing.T, client string, levels []float64) {
		w, err := (&deskload.Agents{URL: stack.URL, HTTP: hc, Token: pop.Token, Agents: spec.Agents,
			Client: client, Pace: pace}).Users()
		require.NoError(t, err)
		checks := []loadtest.Check{
			loadtest.FailuresBelow("", 0.001), // any answer not a success, or slower than 30 s
			stack.ComponentsUp(),
		}
		if client == deskload.Live {
			checks = append(checks, sse.Healthy(), deskStreamsHeld(targetNames(stack)))
		}
		if !testing.Short() {
			checks = append(checks, loadtest.LatencyBelow(loadtest.AllRequests, 95, bar))
		}
		res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
			Workload: w, Plan: loadtest.Levels(ramp, hold, levels...), Checks: checks, Seed: seed,
			Headline: loadtest.AllRequests, Samplers: deskMetrics(stack), Params: k.Params(), Drain: 31 * time.Second,
		}))
		runs.add(setup+"/"+client, res)
		if err := res.Err(); err != nil {
			t.Error(err)
		}
	}
	t.Run("client=live", func(t *testing.T) { run(t, deskload.Live, agents) })
	// The poll client is the client's, not the setup's: a lean -short run
	// (see fixtures.MatrixEnv) runs it on the scale setup only.
	if poll == "top" && lean(t) && setup != "scale" {
		t.Logf("lean -short run: client=poll on setup=scale only (LOADTEST_MATRIX=full for both)")
	} else if poll == "top" {
		t.Run("client=poll", func(t *testing.T) { run(t, deskload.Poll, agents[len(agents)-1:]) })
	}
}

// startDesk starts the desk's setup for up to agents agents: standard is
// one desk doing everything; scale is two web replicas and a worker, all
// through PgBouncer (transaction pooling) but for their LISTEN
// connections. Both send mail to the mock upstream, which answers in
// about 20 ms. As in the seed, no desk process is held to less than the
// machine: each may use both cores and 2 GiB (the seed's desk reached
// 1 GB at 3,000 agents). extra are further options.
func startDesk(t *testing.T, setup string, agents int, extra ...fixtures.Option) *fixtures.Stack {
	mail := map[string]string{
		"DESK_MAIL_URL":           "{{.UpstreamURL}}/echo?delay=20ms&status=200&bytes=64",
		"DESK_MAIL_ALLOW_PRIVATE": "1", // a container network's mock
	}
	opts := []fixtures.Option{fixtures.WithConnections(agents + agents/2)}
	web := deskload.Service()
	web.CPUs, web.Memory = "2", "2GiB"
	if setup == "scale" {
		web.Env["DESK_ROLE"] = "web"
		worker := deskload.Worker()
		for k, v := range mail {
			worker.Env[k] = v
		}
		opts = append(opts, fixtures.WithTarget(web), fixtures.WithReplicas(2), fixtures.WithService(worker),
			fixtures.WithPooler(fixtures.Pooler{}))
	} else {
		for k, v := range mail {
			web.Env[k] = v
		}
		opts = append(opts, fixtures.WithTarget(web))
	}
	return fixtures.Start(t, append(opts, extra...)...)
}

// seedDesk fills the stack's database with spec (idempotent: the same spec
// again writes nothing).
func seedDesk(t *testing.T, stack *fixtures.Stack, spec deskseed.Spec) *deskseed.Population {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, stack.DatabaseURL)
	require.NoError(t, err)
	defer pool.Close()
	pop, err := deskseed.Apply(ctx, pool, spec, deskseed.WithLogf(t.Logf))
	require.NoError(t, err, "seeding the desk")
	return pop
}

// deskMetrics samples each desk web process's own view — held streams,
// database connections in use, Go heap and goroutines — beside what the
// stack samples (stack.Scenario: every container's CPU and memory,
// PostgreSQL's connections by state and application).
func deskMetrics(stack *fixtures.Stack) []loadtest.Sampler {
	return targetMetrics(stack, append([]prom.Series{
		{Metric: "desk_held_streams", Name: "held_streams"},
		{Metric: "desk_db_connections", Labels: map[string]string{"state": "in_use"}, Name: "db_in_use"},
	}, prom.GoRuntime...)...)
}

// targetMetrics samples, for each replica of the target, its Prometheus
// metrics, under the replica's component name ("desk", or "desk-1",
// "desk-2"…), so that its series stand beside the replica's CPU and
// memory.
func targetMetrics(stack *fixtures.Stack, series ...prom.Series) []loadtest.Sampler {
	var out []loadtest.Sampler
	for i, name := range targetNames(stack) {
		out = append(out, &prom.Sampler{URL: stack.TargetURLs[i] + "/metrics", Component: name, Series: series})
	}
	return out
}

// targetNames are the component names of the target's replicas, in the
// order of Stack.TargetURLs.
func targetNames(stack *fixtures.Stack) []string {
	var names []string
	for _, c := range stack.Components() {
		if c.Role == fixtures.RoleTarget {
			names = append(names, c.Name)
		}
	}
	return names
}

// deskStreamsHeld checks that the desk's web processes (components names)
// held, together, one live stream per agent of the step: none refused,
// none lost.
func deskStreamsHeld(names []string) loadtest.Check {
	return loadtest.Custom("the desk holds one live stream per agent", func(s *loadtest.StepResult) error {
		if len(names) == 0 {
			return errors.New("no desk web process to count streams on")
		}
		var held float64
		for _, name := range names {
			r := s.Resource(name, "held_streams")
			if r == nil {
				return fmt.Errorf("no %s/held_streams series: is DESK_METRICS on?", name)
			}
			held += r.Max
		}
		if held < s.Step.Level {
			return fmt.Errorf("the desk held at most %.0f live streams for %g agents", held, s.Step.Level)
		}
		return nil
	})
}
