package loadtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// answer returns a request function whose i-th call (from 0) ends in
// outcome(i) after 5 ms of virtual time.
func answer(outcome func(i int64) loadtest.Outcome) func(context.Context) loadtest.Response {
	var n atomic.Int64
	return func(ctx context.Context) loadtest.Response {
		o := outcome(n.Add(1) - 1)
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
			return loadtest.Response{Outcome: loadtest.Timeout, Err: ctx.Err()}
		}
		if o == loadtest.Timeout { // hang until the deadline
			<-ctx.Done()
			return loadtest.Response{Outcome: loadtest.Timeout, Err: ctx.Err()}
		}
		return loadtest.Response{Outcome: o}
	}
}

func every(n int64, o loadtest.Outcome) func(int64) loadtest.Outcome {
	return func(i int64) loadtest.Outcome {
		if i%n == 0 {
			return o
		}
		return loadtest.OK
	}
}

func always(o loadtest.Outcome) func(int64) loadtest.Outcome {
	return func(int64) loadtest.Outcome { return o }
}

// Every check, in a step where it fails for its reason, and in one where it
// holds: the checks that could not fail before (no request, no success, a
// percentile of a handful of samples, timeouts and drops, observed kinds in
// a denominator) each have a row.
func TestChecksFailForTheRightReason(t *testing.T) {
	const level, hold = 100, 10 * time.Second // 1,000 requests a step
	for _, tc := range []struct {
		name    string
		mix     []loadtest.Kind
		check   loadtest.Check
		level   float64
		verdict result.Verdict
		want    string // in the violation or the invalid reason
	}{
		// p95 of 5 ms holds under 10 ms.
		{"latency holds", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(always(loadtest.OK))}},
			loadtest.LatencyBelow("get", 95, 10*time.Millisecond), level, result.Pass, ""},
		// Every request is a 503: no latency can vouch for the kind.
		{"latency, no success", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(always(loadtest.HTTP5xx))}},
			loadtest.LatencyBelow("get", 95, 10*time.Millisecond), level, result.Fail, "no successful get during the hold ("},
		// 30 answers cannot give a p95: the step is invalid, not passed.
		{"latency, too few samples", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(always(loadtest.OK))}},
			loadtest.LatencyBelow("get", 95, 10*time.Millisecond), 3, result.Invalid, "30 answered get, fewer than the 100 a p95 needs"},
		// ...unless the check says 30 are enough.
		{"latency, MinSamples", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(always(loadtest.OK))}},
			loadtest.Latency{Kind: "get", Percentile: 95, Bound: 10 * time.Millisecond, MinSamples: 30}, 3, result.Pass, ""},
		// A kind the mix (almost) never picks: not a single request.
		{"rate, no request", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(always(loadtest.OK))}, {Name: "rare", Weight: 1e-12, Do: answer(always(loadtest.OK))}},
			loadtest.RateBelow("rare", loadtest.HTTP5xx, 0.01), level, result.Fail, "no successful rare during the hold (none at all)"},
		// 10% 5xx against a 5% bound.
		{"rate", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(every(10, loadtest.HTTP5xx))}},
			loadtest.RateBelow("get", loadtest.HTTP5xx, 0.05), level, result.Fail, "http_5xx rate of get < 5%: measured 10% (100 of "},
		// A bar above a share made on purpose: one in six calls is a tool
		// error, 9 of about 50 in a short step (18%) against a bar of 15%. As a
		// share it breaches...
		{"rate, few requests", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(every(6, loadtest.AppError))}},
			loadtest.RateBelow("get", loadtest.AppError, 0.15), 5, result.Fail, "app_error rate of get < 15%: measured 18"},
		// ...judged as a count, it is what a 15% process gives one step in
		// three (p=0.33): not shown above the bar.
		{"rate judged, by chance", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(every(6, loadtest.AppError))}},
			loadtest.Rate{Kind: "get", Outcome: loadtest.AppError, Max: 0.15, Alpha: 0.01}, 5, result.Pass, ""},
		// One in four of 1,000 is shown above it.
		{"rate judged, shown above", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(every(4, loadtest.AppError))}},
			loadtest.Rate{Kind: "get", Outcome: loadtest.AppError, Max: 0.15, Alpha: 0.01}, level, result.Fail,
			"app_error rate of get < 15% (unless shown above at α 0.01): measured 25% (250 of "},
		// Every 10th request hangs until its 1 s deadline: timeouts count
		// as failures.
		{"failures count timeouts", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(every(10, loadtest.Timeout))}},
			loadtest.FailuresBelow("get", 0.05), level, result.Fail, "failures of get < 5%: measured 10% (100 of "},
		// 8% tool errors are the upstream's, excluded by name.
		{"failures except", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(every(12, loadtest.AppError))}},
			loadtest.FailuresBelow("get", 0.05, loadtest.AppError), level, result.Pass, ""},
		// ...and counted when not excluded.
		{"failures app errors", []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(every(12, loadtest.AppError))}},
			loadtest.FailuresBelow("get", 0.05), level, result.Fail, "failures of get < 5%: measured 8.4"},
	} {
		t.Run("case="+strings.ReplaceAll(tc.name, " ", "-"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res := run(t, loadtest.Scenario{
					Workload: &loadtest.Arrivals{Mix: tc.mix, Timeout: time.Second},
					Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: tc.level, Hold: hold}}},
					Checks:   []loadtest.Check{tc.check},
					Drain:    2 * time.Second,
				})
				s := res.Steps[0]
				require.Equal(t, tc.verdict, s.Verdict, "violations %q, unjudged %q", s.Violations, s.Unjudged)
				err := res.Err()
				switch tc.verdict {
				case result.Pass:
					assert.NoError(t, err)
				case result.Fail:
					require.Len(t, s.Violations, 1)
					assert.Contains(t, s.Violations[0], tc.want)
					assert.ErrorIs(t, err, loadtest.ErrBreach)
					assert.ErrorContains(t, err, "no step passed")
				case result.Invalid:
					require.Len(t, s.Unjudged, 1)
					assert.Contains(t, s.Unjudged[0], tc.want)
					assert.ErrorIs(t, err, loadtest.ErrInvalid)
					assert.NotErrorIs(t, err, loadtest.ErrBreach)
				}
			})
		})
	}
}

// A breach another check is sure of stands beside a check with too few
// answers to judge: the step fails (a collapsing target answers too few
// for a p95), and the unjudged check is still listed.
func TestBreachBesideAnUnjudgedCheckFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: answer(every(2, loadtest.HTTP5xx))}}, Timeout: time.Second},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 3, Hold: 10 * time.Second}}},
			Checks:   []loadtest.Check{loadtest.LatencyBelow("get", 95, 10*time.Millisecond), loadtest.RateBelow("get", loadtest.HTTP5xx, 0.05)},
			Drain:    2 * time.Second,
		})
		s := res.Steps[0]
		assert.Equal(t, result.Fail, s.Verdict, "violations %q, unjudged %q", s.Violations, s.Unjudged)
		require.Len(t, s.Violations, 1)
		assert.Contains(t, s.Violations[0], "http_5xx rate of get < 5%: measured 50%")
		require.Len(t, s.Unjudged, 1)
		assert.Contains(t, s.Unjudged[0], "fewer than the 100 a p95 needs")
		assert.ErrorIs(t, res.Err(), loadtest.ErrBreach)
	})
}

// Arrivals dropped because every worker was busy count as failures.
func TestFailuresCountDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{MaxInFlight: 2, MaxWait: 10 * time.Millisecond,
				Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(50 * time.Millisecond)}}},
			Plan:   loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 5 * time.Second}}},
			Checks: []loadtest.Check{loadtest.FailuresBelow("get", 0.01)},
		})
		s := res.Steps[0]
		require.Equal(t, result.Fail, s.Verdict)
		assert.Contains(t, s.Violations[0], "failures of get < 1%: measured")
		assert.Positive(t, s.Kind("get").Outcomes[loadtest.Dropped])
	})
}

// Observed samples (fan-out delays) are not requests: they do not dilute a
// request-rate check over every kind.
func TestRateOfAllRequestsLeavesObservedKindsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Users{Kinds: []string{"get", "fanout"}, Behavior: func(u *loadtest.User) {
				for u.Sleep(100 * time.Millisecond) {
					u.Do("get", func(context.Context) loadtest.Response {
						if n.Add(1)%10 == 0 {
							return loadtest.Response{Outcome: loadtest.HTTP5xx}
						}
						return loadtest.Response{Outcome: loadtest.OK}
					})
					for range 10 { // ten observed samples per request
						u.Record("fanout", time.Millisecond, loadtest.Response{Outcome: loadtest.OK})
					}
				}
			}},
			Plan:   loadtest.Ladder{Steps: []loadtest.Step{{Level: 10, Hold: 10 * time.Second}}},
			Checks: []loadtest.Check{loadtest.RateBelow("", loadtest.HTTP5xx, 0.05)},
		})
		s := res.Steps[0]
		assert.True(t, s.Kind("fanout").Observed)
		require.Equal(t, result.Fail, s.Verdict, "10% of requests failed; counting fan-out samples would make it 0.9%%")
		assert.Contains(t, s.Violations[0], "http_5xx rate of all requests < 5%: measured ")
		assert.InDelta(t, 0.1, float64(s.Count(loadtest.HTTP5xx))/float64(s.Kind("get").Total()), 0.002)
	})
}

// The latency of every request kind together: a fast kind nine times as
// frequent as a slow one keeps the p95 of all requests under a bound the
// slow kind alone breaks, and a slow p99 breaks it; observed samples of
// a minute, all failed, count in neither, nor in the report's errors. The report's columns follow the headline.
func TestLatencyOfAllRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Users{Kinds: []string{"fast", "slow", "fanout"}, Behavior: func(u *loadtest.User) {
				for i := 0; u.Sleep(100 * time.Millisecond); i++ {
					kind, d := "fast", 10*time.Millisecond
					if i%10 == 9 {
						kind, d = "slow", 500*time.Millisecond
					}
					u.Do(kind, func(context.Context) loadtest.Response {
						time.Sleep(d)
						return loadtest.Response{Outcome: loadtest.OK}
					})
					u.Record("fanout", time.Minute, loadtest.Response{Outcome: loadtest.AppError})
				}
			}},
			Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: 20, Hold: 20 * time.Second}}},
			Checks: []loadtest.Check{
				loadtest.LatencyBelow(loadtest.AllRequests, 50, 20*time.Millisecond),
				loadtest.LatencyBelow(loadtest.AllRequests, 99, 100*time.Millisecond),
				loadtest.LatencyBelow("slow", 50, 100*time.Millisecond),
				// Outcome checks over all requests count the request kinds,
				// not the failing observed samples: the first holds, the
				// second breaks (every request succeeded).
				loadtest.FailuresBelow(loadtest.AllRequests, 0.01),
				loadtest.RateBelow(loadtest.AllRequests, loadtest.OK, 0.5),
			},
			Headline: loadtest.AllRequests,
		})
		s := res.Steps[0]
		all := s.Kind(loadtest.AllRequests)
		require.NotNil(t, all)
		assert.Equal(t, s.Kind("fast").Total()+s.Kind("slow").Total(), all.Total(), "observed samples are not requests")
		assert.Equal(t, s.Kind("fast").Answered()+s.Kind("slow").Answered(), all.Answered())
		assert.Less(t, all.Latency.P50, 20*time.Millisecond)
		assert.GreaterOrEqual(t, all.Latency.P99, 500*time.Millisecond)
		require.Equal(t, result.Fail, s.Verdict)
		require.Len(t, s.Violations, 3, "p50 and failures of all requests hold; p99 of all, p50 of slow and the ok rate of all break: %q", s.Violations)
		assert.Contains(t, s.Violations[0], "p99 of all requests < 100ms: measured 5")
		assert.Contains(t, s.Violations[1], "p50 of slow < 100ms")
		assert.Regexp(t, `^ok rate of all requests < 50%: measured 100% \([0-9]+ of [0-9]+\)$`, s.Violations[2])
		assert.Equal(t, loadtest.AllRequests, res.Headline)
		md := res.Markdown()
		assert.Contains(t, md, "Latency columns are of `all requests`")
		assert.Regexp(t, `\n\| 20 \| [0-9.]+ \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9.]+ ms \| 0% \|`, md,
			"the failed observed samples are no request errors")
	})
}

// fakeSampler reports one series with a limit.
type fakeSampler struct{ m loadtest.Measurement }

func (f fakeSampler) Sample(context.Context, time.Time) ([]loadtest.Measurement, error) {
	return []loadtest.Measurement{f.m}, nil
}

// A target starved of memory answers nothing: the step fails (timeouts,
// no success), no step passes, and the verdict names the component at its
// limit — the case that once passed as "capacity 80".
func TestStarvedTargetFailsNamingTheComponent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Timeout: 500 * time.Millisecond,
				Mix: []loadtest.Kind{{Name: "tools/call", Weight: 1, Do: answer(always(loadtest.Timeout))}}},
			Plan: loadtest.Levels(0, 5*time.Second, 20, 40, 80),
			Checks: []loadtest.Check{
				loadtest.FailuresBelow("tools/call", 0.005, loadtest.AppError),
				loadtest.RateBelow("tools/call", loadtest.AppError, 0.15),
			},
			Samplers: []loadtest.Sampler{fakeSampler{loadtest.Measurement{Component: "relay", Metric: "memory", Unit: "bytes", Value: 8 << 20, Limit: 8 << 20}}},
			Drain:    time.Second,
		})
		require.Len(t, res.Steps, 1, "the ladder stops at the first failure")
		assert.Equal(t, result.Fail, res.Verdict)
		assert.Zero(t, res.Capacity)
		err := res.Err()
		require.ErrorIs(t, err, loadtest.ErrBreach)
		assert.ErrorContains(t, err, "failures of tools/call < 0.5% (not counting app_error): no successful tools/call during the hold (")
		assert.ErrorContains(t, err, "near its limit: relay memory: max 8MiB of 8MiB (100%)")
		assert.ErrorContains(t, err, "no step passed")
	})
}

// failingProxy is a sampler of the harness whose proxy stopped: it reports
// its series and a harness fault.
type failingProxy struct{}

func (failingProxy) Sample(context.Context, time.Time) ([]loadtest.Measurement, error) {
	return []loadtest.Measurement{{Component: "docker-proxy", Metric: "memory", Unit: "bytes", Value: 1 << 20, Harness: true}},
		fmt.Errorf("%w: the proxy of caddy's published port exited", loadtest.ErrHarness)
}

// When the harness itself gives out — its proxy in front of the target
// stopped, so every connection is refused and nothing succeeds — the step is
// invalid, naming the harness, never the target's breach: the case of the
// 3,000-user smoke whose docker-proxy reached its descriptor limit. A series
// of the harness near its limit does the same.
func TestHarnessFaultsMakeTheStepInvalid(t *testing.T) {
	refused := loadtest.Kind{Name: "tools/call", Weight: 1, Do: answer(always(loadtest.TransportError))}
	checks := []loadtest.Check{loadtest.FailuresBelow("tools/call", 0.005)}
	t.Run("fault", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			res := run(t, loadtest.Scenario{
				Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{refused}},
				Plan:     loadtest.Levels(0, 5*time.Second, 20, 40),
				Checks:   checks,
				Samplers: []loadtest.Sampler{failingProxy{}},
			})
			require.Len(t, res.Steps, 1)
			s := res.Steps[0]
			assert.Equal(t, result.Invalid, s.Verdict)
			assert.Contains(t, s.Self.Reasons, "harness fault: the proxy of caddy's published port exited")
			assert.NotEmpty(t, s.Violations, "kept for the record")
			assert.NotNil(t, s.Resource("docker-proxy", "memory"), "a failing sampler's measurements are kept")
			err := res.Err()
			require.ErrorIs(t, err, loadtest.ErrInvalid)
			assert.NotErrorIs(t, err, loadtest.ErrBreach, "not the target's breach")
		})
	})
	t.Run("series", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			res := run(t, loadtest.Scenario{
				Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{refused}},
				Plan:     loadtest.Levels(0, 5*time.Second, 20, 40),
				Checks:   checks,
				Samplers: []loadtest.Sampler{fakeSampler{loadtest.Measurement{Component: "docker-proxy", Metric: "files", Unit: "count", Value: 19500, Limit: 20000, Harness: true}}},
			})
			s := res.Steps[0]
			assert.Equal(t, result.Invalid, s.Verdict)
			assert.Contains(t, s.Self.Reasons, "the harness, not the target, is near its limit: docker-proxy files: max 19500 of 20000 (98%)")
			assert.Empty(t, s.Saturated, "the system under test was not")
			assert.NotErrorIs(t, res.Err(), loadtest.ErrBreach)
		})
	})
}

// Requests that waited inside the generator (for a pool's connection) make
// the step invalid, naming the fix — never a breach of the target.
func TestQueuedRequestsMakeTheStepInvalid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: func(ctx context.Context) loadtest.Response {
				time.Sleep(300 * time.Millisecond) // of which 290 ms in the generator's queue
				return loadtest.Response{Outcome: loadtest.OK, Queued: 290 * time.Millisecond}
			}}}},
			Plan:   loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 5 * time.Second}}},
			Checks: []loadtest.Check{loadtest.LatencyBelow("get", 95, 100*time.Millisecond)},
		})
		s := res.Steps[0]
		require.Equal(t, result.Invalid, s.Verdict)
		assert.Equal(t, 290*time.Millisecond, s.Self.QueuedP99.Round(10*time.Millisecond))
		require.Len(t, s.Self.Reasons, 1)
		assert.Contains(t, s.Self.Reasons[0], "requests waited inside the generator before they could be sent: p99 29")
		assert.Contains(t, s.Self.Reasons[0], "raise httpc.Options.MaxConnsPerHost")
		assert.ErrorIs(t, res.Err(), loadtest.ErrInvalid)
		assert.Zero(t, res.Capacity)
	})
}

// limiter is a fake generator-side bound.
type limiter int

func (l limiter) Limit() (int, string) { return int(l), "the test's pool" }

// Modeled users each holding a request need a pool as large as the top
// level: a smaller one is refused before anything runs.
func TestLimiterSmallerThanThePlanIsRefused(t *testing.T) {
	users := &loadtest.Users{Kinds: []string{"get"}, Behavior: func(u *loadtest.User) {}, Limiters: []loadtest.Limiter{limiter(256)}}
	_, err := loadtest.Run(t.Context(), loadtest.Scenario{Workload: users, Plan: loadtest.Levels(0, time.Second, 1000, 3000)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the test's pool allows 256 requests at once, but the plan reaches 3000 users with up to 1 in flight each: raise it to at least 3000")
	users.Limiters = []loadtest.Limiter{limiter(3000)}
	assert.NoError(t, (&loadtest.Scenario{Workload: users, Plan: loadtest.Levels(0, time.Second, 1000, 3000)}).Validate())
}

// OnStep sees the result after every step, marked incomplete until the run
// has ended.
func TestOnStepSeesEveryStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var seen []*loadtest.Result
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:     loadtest.Levels(0, time.Second, 10, 20, 30),
			OnStep:   func(r *loadtest.Result) { seen = append(seen, r) },
		})
		require.Len(t, seen, 3)
		for i, r := range seen {
			assert.Len(t, r.Steps, i+1)
			assert.True(t, r.Partial)
			assert.Equal(t, result.Incomplete, r.Verdict)
			assert.ErrorIs(t, r.Err(), loadtest.ErrIncomplete)
		}
		assert.Equal(t, result.Pass, res.Verdict)
		assert.NoError(t, res.Err())
	})
}

// Err reports every class in one error.
func TestErrJoinsEveryClass(t *testing.T) {
	res := &loadtest.Result{
		Steps: []*loadtest.StepResult{
			{Index: 0, Step: loadtest.Step{Level: 10}, Verdict: result.Pass},
			{Index: 1, Step: loadtest.Step{Level: 20}, Verdict: result.Fail, Violations: []string{"p95 of get < 1s: measured 2s"}},
			{Index: 2, Step: loadtest.Step{Level: 30}, Verdict: result.Invalid, Self: result.SelfCheckResult{Reasons: []string{"the generator used 95% of its 2 cores"}}},
		},
		Capacity: 10, Verdict: result.Invalid,
		Baseline: &result.Comparison{Path: "baseline.json", Regressions: []string{"capacity dropped to 10"}},
	}
	err := res.Err()
	for _, class := range []error{loadtest.ErrBreach, loadtest.ErrInvalid, loadtest.ErrRegression} {
		assert.ErrorIs(t, err, class)
	}
	assert.NotErrorIs(t, err, loadtest.ErrIncomplete)
	assert.Equal(t, "step 2 (level 20): p95 of get < 1s: measured 2s\n"+
		"step 3 (level 30) is invalid: the generator used 95% of its 2 cores\n"+
		"regression against baseline.json: capacity dropped to 10", err.Error())
	var nilErr error
	assert.Equal(t, nilErr, (&loadtest.Result{Steps: res.Steps[:1], Capacity: 10, Verdict: result.Pass}).Err())
	assert.True(t, errors.Is((&loadtest.Result{Partial: true, Verdict: result.Incomplete}).Err(), loadtest.ErrIncomplete))
}
