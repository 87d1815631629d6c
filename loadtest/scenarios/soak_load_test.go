//go:build load

package scenarios

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/go-units"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// TestLoad_Soak is seed 004's open question — memory over a working day —
// asked of the relay: USERS modeled users of the gateway (each holding its
// stream, calling a tool every GAP on average, viewing the dashboard) held
// for SOAK, with every component's memory and the relay's goroutines
// fitted over the hold (loadtest.Soak; the first third is warm-up). Two
// relays: as built (service=steady), which must not be flagged, and one
// that leaves a goroutine holding LEAK bytes behind every tools/call
// (service=leaky, RELAY_FAULT=call-leak), which must be — its memory and
// goroutines both judged leaks. The database's memory is reported beside
// them, not judged (it grows with the usage rows). Memory growth the fit
// is not sure reaches MATTERS an hour is no leak: 0 at full size (any
// growth past the floors), 512MiB in -short, whose half minute cannot
// tell a slow leak from warm-up. There the steady relay's memory grew 0.2
// to 1.3 MiB over the fit's 20 s here (up to about 230 MiB/h; its
// goroutines rose with the busiest moment so far), past the 1 MiB floor
// in one of five runs; the leaky relay's grew about 5 GiB/h.
//
// Bars: steady — no leak, no failed request, every stream healthy; leaky —
// the step fails on the relay's memory and goroutines, and on nothing of
// the steady relay's.
//
// Knobs: USERS, SOAK (the hold: 2h at full size, 30s in -short), GAP,
// MATTERS (the slowest memory growth that is a leak, an hour), LEAK, LEAKY (the leaky relay's hold, at most SOAK: 3m, 30s in -short),
// SAMPLE (the sampling interval: 10s, 500ms in -short), LOADTEST_BACKEND.
func TestLoad_Soak(t *testing.T) {
	notDeployed(t, "starts a leaky build of its target and samples its process")
	besideOthers(t)
	k := loadtest.NewKnobs(t)
	users := k.Int("USERS", "100", "30", 1)
	hold := k.Duration("SOAK", "2h", "30s")
	gap := k.Duration("GAP", "5s", "500ms")
	every := k.Duration("SAMPLE", "10s", "500ms")
	leak := k.Int("LEAK", "16384", "16384", 1)
	matters, err := units.RAMInBytes(k.String("MATTERS", "0", "512MiB"))
	if err != nil || matters < 0 {
		t.Fatalf("knob MATTERS: give the slowest memory growth that is a leak, per hour (512MiB; 0 for any past the floors): %v", err)
	}

	// The leaky relay gives itself away in minutes, and at full size would
	// run out of memory long before the hold ended (then it would fail as
	// down, not as leaking): its hold is at most LEAKY, sampled sixty
	// times at least.
	leaky := min(hold, k.Duration("LEAKY", "3m", "30s"))

	soak := func(t *testing.T, env map[string]string) *loadtest.Result {
		hold, every := hold, every
		if env["RELAY_FAULT"] != "" {
			hold, every = leaky, min(every, leaky/60)
		}
		relay := relayload.Service()
		relay.Pprof = ""
		env["RELAY_METRICS"] = "1"
		stack := fixtures.Start(t, fixtures.WithTarget(relay), fixtures.WithDatabase(fixtures.Postgres),
			fixtures.WithUpstreamBehavior(stubUpstream(time.Millisecond)), fixtures.WithTargetEnv(env))
		pop := populate(t, k, stack, users, 5000, 1)
		hc := gatewayClient(t, stack, users)
		gateway, err := (&relayload.Gateway{URL: stack.URL + "/mcp", DashboardURL: stack.URL + "/api/dashboard",
			HTTP: hc, Token: pop.TokenOf, MeanGap: gap}).Users()
		require.NoError(t, err)
		plan := loadtest.Soak(float64(users), 3*time.Second, hold)
		plan.Steps[0].LeakMatters = float64(matters)
		s := stack.Scenario(loadtest.Scenario{
			Name:     t.Name(),
			Workload: gateway, Plan: plan,
			Checks: []loadtest.Check{
				loadtest.FailuresBelow(mcp.KindCallTool, 0.001, loadtest.AppError),
				loadtest.FailuresBelow(sse.KindDelivery, 0.001),
				sse.Healthy(), stack.ComponentsUp(),
			},
			Samplers: relayMetrics(stack), SampleEvery: every, Params: k.Params(),
		})
		if env["RELAY_FAULT"] == "" {
			return loadtest.Test(t, s)
		}
		// The leaky relay fails on purpose: run, not judged as the test.
		res, err := loadtest.Run(t.Context(), s)
		require.NoError(t, err)
		return res
	}
	growth := func(res *loadtest.Result, name string) result.Growth {
		for _, g := range res.Steps[0].Growth {
			if g.Name() == name {
				return g
			}
		}
		return result.Growth{}
	}
	logGrowth := func(t *testing.T, res *loadtest.Result) {
		for _, g := range res.Steps[0].Growth {
			t.Logf("%s (judged %v); %s", g, g.Judged, g.Day())
		}
	}

	// The two relays soak side by side: neither arm's verdict rests on
	// its speed.
	t.Run("service=steady", func(t *testing.T) {
		t.Parallel()
		res := soak(t, map[string]string{})
		require.Len(t, res.Steps, 1)
		logGrowth(t, res)
		for _, g := range res.Steps[0].Growth {
			if g.Judged {
				assert.False(t, g.Leak, "the relay as built does not leak: %s", g)
			}
		}
		assert.NotZero(t, growth(res, "relay goroutines").Windows, "the relay's goroutines are fitted")
		if err := res.Err(); err != nil {
			t.Error(err)
		}
	})
	t.Run("service=leaky", func(t *testing.T) {
		t.Parallel()
		res := soak(t, map[string]string{"RELAY_FAULT": "call-leak:" + strconv.Itoa(leak)})
		require.Len(t, res.Steps, 1)
		logGrowth(t, res)
		s := res.Steps[0]
		assert.Equal(t, result.Fail, s.Verdict, "a leak of %d bytes and a goroutine a call fails the soak", leak)
		for _, name := range []string{"relay memory", "relay goroutines"} {
			g := growth(res, name)
			assert.True(t, g.Leak && g.Judged, "%s must read as a judged leak: %s", name, g)
		}
		var leaks []string
		for _, v := range s.Violations {
			if strings.HasPrefix(v, "no leak over the soak: ") {
				leaks = append(leaks, v)
			}
		}
		assert.Len(t, leaks, 2, "the relay's memory and goroutines, nothing else: %v", s.Violations)
		assert.Len(t, s.Violations, len(leaks), "nothing but the leak failed: %v", s.Violations)
	})
}
