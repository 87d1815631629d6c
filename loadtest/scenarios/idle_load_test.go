//go:build load

package scenarios

import (
	"fmt"
	"testing"
	"time"

	"github.com/docker/go-units"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// TestLoad_IdleStreams measures what an idle connected user costs the
// relay (seed 000: ~40 KB and ~2.5 goroutines a stream on the published
// gateway): a ladder of STREAMS idle users, each connecting (initialize,
// tools/list) and then holding its notification stream without a call;
// at every step the relay's container memory, Go heap, goroutine stacks
// and goroutines are sampled, and least-squares lines over the steps give
// the cost of one more held stream, with 95% intervals, as the result's
// findings. The relay must hold one stream per user through every hold,
// each stream healthy (no missed keepalive); a full run fails
// when the memory per stream is surely (its interval's low end) above
// MAX_STREAM_BYTES.
//
// Knobs: STREAMS, RAMP, HOLD, MAX_STREAM_BYTES, SEED, LOADTEST_DB.
func TestLoad_IdleStreams(t *testing.T) {
	besideOthers(t)
	k := loadtest.NewKnobs(t)
	levels := k.Levels("STREAMS", "500,1000,2000,3000,5000", "20,40,80")
	ramp, hold := k.DurationOrZero("RAMP", "20s", "2s"), k.Duration("HOLD", "30s", "6s")
	budget, err := units.RAMInBytes(k.String("MAX_STREAM_BYTES", "64KiB", "64KiB"))
	require.NoError(t, err, "knob MAX_STREAM_BYTES: give a size such as 64KiB")
	seed := k.Uint("SEED", "1", "1")
	top := int(levels[len(levels)-1])

	stack := fixtures.Start(t, fixtures.WithTarget(relayload.Service()), fixtures.WithTargetEnv(relayEnv), fixtures.WithConnections(top+top/10))
	pop := populate(t, k, stack, top, 0, seed)
	hc := gatewayClient(t, stack, top)
	checkClientAddrs(t, stack, hc)
	idle, err := (&relayload.Gateway{URL: stack.URL + "/mcp", HTTP: hc, Token: pop.TokenOf, Idle: true, Reconnect: -1}).Users()
	require.NoError(t, err)

	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Workload: idle, Plan: loadtest.Levels(ramp, hold, levels...), Seed: seed,
		// Users connect during the ramps; the holds see their streams.
		Checks:   []loadtest.Check{heldStreams(), sse.Healthy(), stack.ComponentsUp()},
		Samplers: relayMetrics(stack), Params: k.Params(),
		Analyze: streamCosts, Drain: 5 * time.Second,
	}))
	for _, f := range res.Findings {
		t.Log(f)
	}
	if err := res.Err(); err != nil {
		t.Error(err)
	}
	for _, f := range res.Findings {
		if f.Name == "relay memory per held stream" && !testing.Short() && f.Low > float64(budget) {
			t.Errorf("an idle stream costs the relay %s, more than MAX_STREAM_BYTES %s", units.BytesSize(f.Value), units.BytesSize(float64(budget)))
		}
	}
}

// heldStreams checks that the relay held, at the end of the hold, as many
// user streams as the step has users: none lost, none left over.
func heldStreams() loadtest.Check {
	return loadtest.Custom("the relay holds one stream per idle user", func(s *loadtest.StepResult) error {
		r := s.Resource("relay", "held_streams")
		if r == nil {
			return fmt.Errorf("no relay/held_streams series: is RELAY_METRICS on?")
		}
		if r.Max < s.Step.Level || r.Max > s.Step.Level*1.01+1 {
			return fmt.Errorf("the relay held at most %.0f streams for %g idle users", r.Max, s.Step.Level)
		}
		return nil
	})
}

// streamCosts fits the relay's memory, heap, stacks and goroutines against
// the streams it held, step by step.
func streamCosts(res *loadtest.Result) ([]result.Finding, error) {
	var out []result.Finding
	for _, m := range []struct{ component, metric, name, unit string }{
		{"relay", "memory", "relay memory per held stream", "bytes"},
		{"relay", "heap_inuse", "Go heap per held stream", "bytes"},
		{"relay", "stack_inuse", "goroutine stacks per held stream", "bytes"},
		{"relay", "goroutines", "goroutines per held stream", "goroutines"},
	} {
		var xs, ys []float64
		for _, s := range res.Steps {
			x, y := s.Resource("relay", "held_streams"), s.Resource(m.component, m.metric)
			if s.Verdict == result.Pass && x != nil && y != nil {
				xs, ys = append(xs, x.Mean), append(ys, y.Mean)
			}
		}
		l, err := result.FitLine(xs, ys)
		if err != nil {
			return out, fmt.Errorf("%s: %w (from the steps that passed)", m.name, err)
		}
		out = append(out, result.LineFinding(m.name, m.unit, l))
	}
	return out, nil
}
