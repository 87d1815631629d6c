package loadtest_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// get returns a request function for a plain GET of url.
func get(c *http.Client, url string) func(context.Context) loadtest.Response {
	return func(ctx context.Context) loadtest.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return loadtest.Response{Outcome: loadtest.Timeout, Err: err}
			}
			return loadtest.Response{Outcome: loadtest.TransportError, Err: err}
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return loadtest.Response{Outcome: loadtest.StatusOutcome(resp.StatusCode), Bytes: n}
	}
}

// latencyServer answers after a delay that grows with the request rate it
// sees: a target with a known knee.
func latencyServer(t *testing.T, delay func() time.Duration) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay())
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestEndToEndLadderPasses(t *testing.T) {
	srv := latencyServer(t, func() time.Duration { return 2 * time.Millisecond })
	res := run(t, loadtest.Scenario{
		Name:     "ladder-passes",
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: get(srv.Client(), srv.URL)}}},
		Plan:     loadtest.Levels(500*time.Millisecond, 2*time.Second, 60, 120, 240),
		Checks: []loadtest.Check{
			loadtest.LatencyBelow("get", 95, time.Second),
			loadtest.RateBelow("get", loadtest.TransportError, 0.005),
			loadtest.NoDropped(),
		},
		ProgressEvery: time.Second,
		Logf:          t.Logf,
	})
	require.NoError(t, res.Err())
	require.Len(t, res.Steps, 3)
	assert.Equal(t, result.Pass, res.Verdict, res.Invalid())
	assert.Equal(t, 240.0, res.Capacity)
	for _, s := range res.Steps {
		assert.InEpsilon(t, s.Step.Level, s.Throughput, 0.1, "step %d throughput", s.Index)
		assert.Equal(t, s.Kind("get").Total()*2, s.Kind("get").Bytes)
		var cpu bool
		for _, r := range s.Resources {
			cpu = cpu || (r.Component == "generator" && r.Metric == "cpu")
		}
		assert.True(t, cpu, "the generator's CPU is sampled in every step")
	}
}

func TestEndToEndTopStepFails(t *testing.T) {
	// The server serialises requests: each holds a lock for 10 ms, so it
	// answers at most ~100/s and queues beyond that.
	var busy atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for !busy.CompareAndSwap(0, 1) {
			if r.Context().Err() != nil {
				return
			}
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(10 * time.Millisecond)
		busy.Store(0)
	}))
	t.Cleanup(srv.Close)
	res := run(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: get(srv.Client(), srv.URL)}}},
		Plan:     loadtest.Levels(0, 2*time.Second, 10, 30, 300),
		// ~20 requests at the lowest level: enough here, where the knee is
		// sharp (the default asks for 100 samples of a p95).
		Checks: []loadtest.Check{loadtest.Latency{Kind: "get", Percentile: 95, Bound: 200 * time.Millisecond, MinSamples: 15}},
		Drain:  5 * time.Second,
	})
	require.Len(t, res.Steps, 3)
	assert.Equal(t, []result.Verdict{result.Pass, result.Pass, result.Fail}, verdicts(res), res.Err())
	assert.Equal(t, 30.0, res.Capacity)
	assert.ErrorContains(t, res.Err(), "step 3 (level 300): p95 of get < 200ms")
}

// A server that stalls every request for 1 s once every 5 s, driven at a
// constant rate for 20 s: the stall shows in p99, the median stays low.
func TestEndToEndStallShowsInP99(t *testing.T) {
	if testing.Short() {
		t.Skip("20 s of load")
	}
	start := time.Now()
	srv := latencyServer(t, func() time.Duration {
		if phase := time.Since(start) % (5 * time.Second); phase < time.Second {
			return time.Second - phase
		}
		return 0
	})
	res := run(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: get(srv.Client(), srv.URL)}}},
		Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 20 * time.Second}}},
	})
	g := res.Steps[0].Kind("get")
	t.Logf("p50 %v p90 %v p99 %v max %v", g.Latency.P50, g.Latency.P90, g.Latency.P99, g.Latency.Max)
	assert.GreaterOrEqual(t, g.Latency.P99, 800*time.Millisecond)
	assert.Less(t, g.Latency.P50, 100*time.Millisecond)
	assert.Zero(t, g.Outcomes[loadtest.Dropped])
}

// A generator that runs out of CPU marks its step invalid instead of
// failing the target.
func TestEndToEndSaturatedGeneratorIsInvalid(t *testing.T) {
	srv := latencyServer(t, func() time.Duration { return 0 })
	c := srv.Client()
	burn := func(ctx context.Context) loadtest.Response {
		// 2 ms of CPU on the generator's side for every request.
		for end := time.Now().Add(2 * time.Millisecond); time.Now().Before(end); {
		}
		return get(c, srv.URL)(ctx)
	}
	res := run(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: burn}}},
		Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 3000, Hold: 2 * time.Second}}},
		Checks:   []loadtest.Check{loadtest.LatencyBelow("get", 99, 50*time.Millisecond)},
		Drain:    3 * time.Second,
	})
	s := res.Steps[0]
	assert.Equal(t, result.Invalid, s.Verdict, "self-check %+v", s.Self)
	assert.NotEmpty(t, s.Self.Reasons)
	assert.Equal(t, result.Invalid, res.Verdict)
	assert.NotEmpty(t, res.Invalid())
	assert.Equal(t, 0.0, res.Capacity, "an invalid step is no capacity")
}
