package loadtest_test

import (
	"context"
	"fmt"
	"slices"
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

// herd is a workload of one's own: every second, level requests at once (a
// thundering herd), each measured from its tick.
type herd struct {
	do func(ctx context.Context) loadtest.Response
	// late is how late the first lateN requests start after their tick.
	late  time.Duration
	lateN int64
}

func (h herd) KindNames() []string { return []string{"herd"} }
func (h herd) Validate() error     { return nil }
func (h herd) Start(ctx context.Context, rec *loadtest.Recorder, seed uint64) loadtest.Driver {
	d := &herdDriver{h: h, rec: rec, done: make(chan struct{})}
	ctx, d.cancel = context.WithCancel(ctx)
	go d.loop(ctx)
	return d
}

type herdDriver struct {
	h        herd
	rec      *loadtest.Recorder
	level    atomic.Int64
	inflight atomic.Int64
	sent     int64
	cancel   context.CancelFunc
	done     chan struct{}
	wg       sync.WaitGroup
}

func (d *herdDriver) Ramp(level float64, _ time.Duration) { d.level.Store(int64(level)) }
func (d *herdDriver) InFlight() int64                     { return d.inflight.Load() }
func (d *herdDriver) Stop()                               { d.cancel(); <-d.done; d.wg.Wait() }

func (d *herdDriver) loop(ctx context.Context) {
	defer close(d.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case tick := <-t.C:
			for range d.level.Load() {
				intended := tick
				if d.sent < d.h.lateN {
					intended = tick.Add(-d.h.late)
				}
				d.sent++
				p := d.rec.Request("herd", intended)
				d.inflight.Add(1)
				d.wg.Go(func() {
					defer d.inflight.Add(-1)
					resp := d.h.do(ctx)
					if ctx.Err() != nil {
						p.Abandon()
						return
					}
					p.End(resp)
				})
			}
		}
	}
}

// A workload written outside the package runs like the built-in ones: its
// requests are offered load, measured from their intended time, checked.
func TestWorkloadOfYourOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := run(t, loadtest.Scenario{
			Workload: herd{do: sleeper(20 * time.Millisecond)},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 5, Hold: 10 * time.Second}}},
			Checks:   []loadtest.Check{loadtest.Latency{Kind: "herd", Percentile: 95, Bound: 50 * time.Millisecond, MinSamples: 40}},
		})
		s := res.Steps[0]
		require.Equal(t, result.Pass, s.Verdict, s.Violations)
		assert.Equal(t, "custom", res.Model)
		assert.InDelta(t, 50, s.Kind("herd").Total(), 5)
		assert.InDelta(t, 5, s.Offered, 0.5)
		assert.Equal(t, 20*time.Millisecond, s.Kind("herd").Latency.P50.Round(time.Millisecond))
	})
}

// The schedule-lag self-check voids a step whose requests started late,
// and counts them; a p99 beyond its bound resting on fewer than five late
// starts — one stall of a shared machine in a short step — does not.
func TestScheduleLagNeedsFiveLateStarts(t *testing.T) {
	for _, tc := range []struct {
		lateN int64
		want  result.Verdict
	}{{50, result.Invalid}, {5, result.Invalid}, {4, result.Pass}} {
		synctest.Test(t, func(t *testing.T) {
			res := run(t, loadtest.Scenario{
				Workload: herd{do: sleeper(time.Millisecond), late: 80 * time.Millisecond, lateN: tc.lateN},
				Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 20, Hold: 10 * time.Second}}},
			})
			s := res.Steps[0]
			assert.Equal(t, tc.want, s.Verdict, "%d late: %v", tc.lateN, s.Self.Reasons)
			assert.Equal(t, tc.lateN, s.Self.LateStarts)
			assert.Greater(t, s.Self.ScheduleLagP99, 50*time.Millisecond, "%d of %d late", tc.lateN, s.Kind("herd").Total())
			if tc.want == result.Invalid {
				require.Len(t, s.Self.Reasons, 1)
				assert.Regexp(t, fmt.Sprintf(`^the generator started requests late: schedule lag p99 80\.\d+ms > 50ms \(%d started later than that\)$`, tc.lateN), s.Self.Reasons[0])
			}
		})
	}
}

// The open model can record observations: a request function that
// publishes, and a subscriber outside the workload recording each
// message's fan-out delay through the scenario's Recorder.
func TestOpenModelRecordsObservations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := loadtest.NewRecorder("fanout")
		published := make(chan time.Time, 1024)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { // the subscriber
			for {
				select {
				case <-ctx.Done():
					return
				case at := <-published:
					time.Sleep(3 * time.Millisecond) // delivery
					rec.Record("fanout", time.Since(at), loadtest.Response{Outcome: loadtest.OK})
				}
			}
		})
		publish := func(ctx context.Context) loadtest.Response {
			published <- time.Now()
			return loadtest.Response{Outcome: loadtest.OK}
		}
		res := run(t, loadtest.Scenario{
			Recorder: rec,
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "publish", Weight: 1, Do: publish}}},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 10 * time.Second}}},
			Checks:   []loadtest.Check{loadtest.LatencyBelow("fanout", 99, 10*time.Millisecond)},
		})
		cancel()
		wg.Wait()
		s := res.Steps[0]
		f := s.Kind("fanout")
		require.NotNil(t, f, "the fan-out kind is in the step")
		assert.True(t, f.Observed)
		assert.InDelta(t, 1000, f.Total(), 20)
		assert.Equal(t, 3*time.Millisecond, f.Latency.P50.Round(time.Millisecond))
		assert.InDelta(t, 100, s.Achieved, 1, "observations are not requests")
		assert.Equal(t, result.Pass, s.Verdict, s.Violations)
	})
}

// An Arrivals Kind.Do draws its random choices from Rand(ctx): the same
// in every run of a seed, another with another seed.
func TestArrivalsRandIsTheSeeds(t *testing.T) {
	draws := func(seed uint64) []uint64 {
		var mu sync.Mutex
		var out []uint64
		synctest.Test(t, func(t *testing.T) {
			do := func(ctx context.Context) loadtest.Response {
				v := loadtest.Rand(ctx).Uint64()
				mu.Lock()
				out = append(out, v)
				mu.Unlock()
				time.Sleep(time.Duration(v%50) * time.Millisecond) // workers finish out of order
				return loadtest.Response{Outcome: loadtest.OK}
			}
			run(t, loadtest.Scenario{Seed: seed, Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: do}}},
				Plan: loadtest.Levels(0, 2*time.Second, 100)})
		})
		slices.Sort(out)
		return out
	}
	a, b, c := draws(7), draws(7), draws(8)
	require.NotEmpty(t, a)
	// One seed, one stream of draws: the runs share every arrival but
	// the last one or two, sent as the workload stopped.
	if len(a) > len(b) {
		a, b = b, a
	}
	assert.LessOrEqual(t, len(b)-len(a), 2)
	assert.Subset(t, b, a, "one seed, the same draws")
	common := 0
	for _, v := range c {
		if _, ok := slices.BinarySearch(a, v); ok {
			common++
		}
	}
	assert.Zero(t, common, "another seed, other draws")
	assert.Greater(t, len(slices.Compact(slices.Clone(a))), len(a)*9/10, "every arrival its own draws")
}
