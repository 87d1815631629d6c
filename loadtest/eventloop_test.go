package loadtest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// fakeLoop is an EventLoop over a synthetic target: answer says, for each
// request as it is sent, how long the target takes and what it answers.
type fakeLoop struct {
	kinds   int
	answer  func(kind int, sent time.Time) (time.Duration, loadtest.Response)
	wake    chan struct{}
	pending []fakeReq
	sent    atomic.Int64 // read by the test while the schedule runs
	closed  atomic.Int64
}

type fakeReq struct {
	id   int
	due  time.Time
	resp loadtest.Response
}

func newFakeLoop(kinds int, answer func(kind int, sent time.Time) (time.Duration, loadtest.Response)) *fakeLoop {
	return &fakeLoop{kinds: kinds, answer: answer, wake: make(chan struct{}, 1)}
}

func (f *fakeLoop) Kinds() int { return f.kinds }

func (f *fakeLoop) Send(kind, id int, timeout time.Duration) {
	f.sent.Add(1)
	d, r := f.answer(kind, time.Now())
	f.pending = append(f.pending, fakeReq{id, time.Now().Add(d), r})
}

func (f *fakeLoop) Wait(until time.Time, done func(int, loadtest.Response, time.Time)) {
	next := until
	for _, p := range f.pending {
		if p.due.Before(next) {
			next = p.due
		}
	}
	t := time.NewTimer(time.Until(next))
	select {
	case <-t.C:
	case <-f.wake:
	}
	t.Stop()
	now := time.Now()
	ps := f.pending
	f.pending = nil
	for _, p := range ps {
		if p.due.After(now) {
			f.pending = append(f.pending, p)
		} else {
			done(p.id, p.resp, p.due) // may Send the arrival that waited for room
		}
	}
}

func (f *fakeLoop) Wake() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fakeLoop) Close() { f.closed.Add(1); f.pending = nil }

var okResp = loadtest.Response{Outcome: loadtest.OK, Bytes: 100}

// On an event loop, latency still runs from the intended send time: a
// target that stalls every request for 1 s once every 5 s shows in p99
// while the median stays low, as with Do (TestCoordinatedOmissionInVirtualTime).
func TestLoopArrivals_CoordinatedOmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := newFakeLoop(1, func(_ int, sent time.Time) (time.Duration, loadtest.Response) {
			d := time.Millisecond
			if phase := sent.Sub(start) % (5 * time.Second); phase < time.Second {
				d += time.Second - phase
			}
			return d, okResp
		})
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1}}, Loop: l},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 20 * time.Second}}},
		})
		get := res.Steps[0].Kind("get")
		assert.InDelta(t, 2000, get.Total(), 2)
		assert.Less(t, get.Latency.P50, 5*time.Millisecond)
		assert.Greater(t, get.Latency.P99, 800*time.Millisecond)
		assert.Equal(t, int64(1), l.closed.Load(), "the loop is closed when the run ends")
	})
}

// Level changes reach a loop's schedule: each step of a ladder is held at
// its own rate, and the kinds of the mix keep their weights.
func TestLoopArrivals_Ladder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFakeLoop(2, func(int, time.Time) (time.Duration, loadtest.Response) { return 2 * time.Millisecond, okResp })
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "a", Weight: 3}, {Name: "b", Weight: 1}}, Loop: l},
			Plan:     loadtest.Levels(time.Second, 5*time.Second, 20, 80),
		})
		require.Len(t, res.Steps, 2)
		var a, b float64
		for i, want := range []float64{20, 80} {
			s := res.Steps[i]
			assert.InDelta(t, want, s.Throughput, want/20, "step %d", i+1)
			a += float64(s.Kind("a").Total())
			b += float64(s.Kind("b").Total())
		}
		assert.InDelta(t, 0.25, b/(a+b), 0.06, "b's share of 500 arrivals")
		assert.Equal(t, result.Pass, res.Verdict)
	})
}

// When MaxInFlight requests are on the loop, arrivals wait for room, and
// are dropped and counted after MaxWait, as with Do's workers
// (TestArrivalsDroppedWhenNoWorkerFree).
func TestLoopArrivals_Dropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFakeLoop(1, func(int, time.Time) (time.Duration, loadtest.Response) { return time.Second, okResp })
		res := run(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{MaxInFlight: 5, MaxWait: 50 * time.Millisecond, Mix: []loadtest.Kind{{Name: "get", Weight: 1}}, Loop: l},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Hold: 10 * time.Second}}},
			Checks:   []loadtest.Check{loadtest.NoDropped()},
			Drain:    2 * time.Second,
		})
		get := res.Steps[0].Kind("get")
		assert.InDelta(t, 50, get.Outcomes[loadtest.OK], 6)
		assert.InDelta(t, 950, get.Outcomes[loadtest.Dropped], 6)
		assert.Equal(t, result.Fail, res.Steps[0].Verdict)
		assert.LessOrEqual(t, l.sent.Load(), int64(60), "a dropped arrival is never sent")
	})
}

// A cancelled run keeps what it measured; the requests still on the loop
// are abandoned, not counted against the target.
func TestLoopArrivals_CancelAbandons(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFakeLoop(1, func(int, time.Time) (time.Duration, loadtest.Response) { return 500 * time.Millisecond, okResp })
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		res, err := loadtest.Run(ctx, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1}}, Loop: l},
			Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 10, Hold: 10 * time.Second}}},
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		get := res.Steps[0].Kind("get")
		assert.Zero(t, get.Total()-get.Outcomes[loadtest.OK], "only answers are counted: %v", get.Outcomes)
		assert.InDelta(t, 25, get.Outcomes[loadtest.OK], 3)
		assert.Equal(t, int64(1), l.closed.Load())
	})
}

// A loop must send every kind of the mix; Do may then be nil.
func TestLoopArrivals_Validate(t *testing.T) {
	l := newFakeLoop(1, nil)
	err := (&loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}}, Loop: l}).Validate()
	assert.ErrorContains(t, err, "Arrivals.Loop sends 1 kinds of request and Mix has 2")
	assert.NoError(t, (&loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "a", Weight: 1}}, Loop: l}).Validate())
	assert.ErrorContains(t, (&loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "a", Weight: 1}}}).Validate(), "Do is nil")
}

// A loop's schedule idle at level 0 wakes for a new level at once, and
// stops at once: its sleep is the loop's, which Ramp and Stop wake.
func TestLoopArrivals_WakesForALevel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newFakeLoop(1, func(int, time.Time) (time.Duration, loadtest.Response) { return time.Millisecond, okResp })
		w := &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1}}, Loop: l}
		d := w.Start(t.Context(), loadtest.NewRecorder("get"), 1)
		time.Sleep(time.Second)
		assert.Zero(t, l.sent.Load(), "nothing sent at level 0")
		d.Ramp(100, 0)
		time.Sleep(time.Second)
		assert.InDelta(t, 100, l.sent.Load(), 2, "a second at 100/s after the level changed")
		d.Ramp(0, 0)
		time.Sleep(100 * time.Millisecond)
		stopped := make(chan struct{})
		go func() { d.Stop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(time.Second):
			t.Fatal("Stop did not end the loop's wait")
		}
		assert.Equal(t, int64(1), l.closed.Load())
	})
}
