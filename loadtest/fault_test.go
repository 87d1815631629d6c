package loadtest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// faultyTarget answers in 5 ms, except while frozen, when a request waits
// for the thaw up to its 2 s timeout (as a paused database's callers do),
// and while failing, when it fails at once.
type faultyTarget struct {
	mu          sync.Mutex
	frozen      bool
	thaw        chan struct{}
	failUntil   time.Time
	injects     int
	clears      int
	failsToStop bool // Clear leaves it frozen: a system that never recovers
}

func newFaultyTarget() *faultyTarget { return &faultyTarget{thaw: make(chan struct{})} }

func (f *faultyTarget) do(ctx context.Context) loadtest.Response {
	f.mu.Lock()
	frozen, thaw, failing := f.frozen, f.thaw, time.Now().Before(f.failUntil)
	f.mu.Unlock()
	if failing {
		return loadtest.Response{Outcome: loadtest.HTTP5xx, Err: errors.New("503")}
	}
	if frozen {
		t := time.NewTimer(2 * time.Second)
		defer t.Stop()
		select {
		case <-thaw:
		case <-t.C:
			return loadtest.Response{Outcome: loadtest.Timeout, Err: errors.New("timed out")}
		case <-ctx.Done():
			return loadtest.Response{Outcome: loadtest.Timeout, Err: ctx.Err()}
		}
	}
	return sleeper(5 * time.Millisecond)(ctx)
}

func (f *faultyTarget) freeze(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen, f.injects = true, f.injects+1
	return nil
}

func (f *faultyTarget) unfreeze(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clears++
	if !f.failsToStop {
		f.frozen = false
		close(f.thaw)
		f.thaw = make(chan struct{})
	}
	return nil
}

// faultScenario holds 100 arrivals/s for 12 s with f in step 1.
func faultScenario(tg *faultyTarget, f loadtest.Fault, checks ...loadtest.Check) loadtest.Scenario {
	return loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "call", Weight: 1, Do: tg.do}}},
		Plan:     loadtest.Ladder{Steps: []loadtest.Step{{Level: 100, Ramp: time.Second, Hold: 12 * time.Second}}},
		Faults:   []loadtest.Fault{f},
		Checks:   checks,
		Drain:    5 * time.Second,
	}
}

// TestFaultMeasured: a target frozen 3 s into the hold for 3 s is seen in
// the first window after the freeze and recovers within a window of the
// thaw; the requests that waited past their 2 s timeout are counted as
// failed and timed out; the step passes a 2 s recovery bound.
func TestFaultMeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newFaultyTarget()
		res := run(t, faultScenario(tg, loadtest.Fault{Name: "target frozen 3s", Step: 1, At: 3 * time.Second, For: 3 * time.Second,
			Inject: tg.freeze, Clear: tg.unfreeze}, loadtest.RecoversWithin(2*time.Second)))
		require.Len(t, res.Steps, 1)
		sr := res.Steps[0]
		require.Len(t, sr.Faults, 1)
		f := sr.Faults[0]
		t.Logf("%s", f)
		assert.Equal(t, 1, tg.injects)
		assert.Equal(t, 1, tg.clears)
		assert.True(t, f.Applied())
		assert.InDelta(t, 3.0, f.Injected.Sub(sr.Start).Seconds(), 0.01)
		assert.InDelta(t, 3.0, f.Cleared.Sub(f.Injected).Seconds(), 0.01)
		assert.True(t, f.Detected, "a frozen target is seen")
		assert.LessOrEqual(t, f.DetectedAfter, time.Second)
		assert.False(t, f.Unrecovered)
		assert.Less(t, f.RecoveredAfter, time.Second)
		// 100/s frozen 3 s: those sent in its first second time out (2 s
		// before the thaw), the rest are answered at the thaw.
		assert.InDelta(t, 100, f.TimedOut, 15, "%s", f.FailedText())
		assert.Equal(t, f.Failed, f.TimedOut)
		assert.Greater(t, f.Answered, f.Failed)
		assert.Equal(t, result.Pass, sr.Verdict, "%v %v", sr.Violations, sr.InvalidReasons())
		md := res.Markdown()
		assert.Contains(t, md, "## Faults")
		assert.Contains(t, md, "| 1 | target frozen 3s | 3s | 3s | "+f.Seen()+" | "+f.Recovery()+" | "+f.FailedText()+" |")
	})
}

// TestFaultNeverRecovered: a clear that leaves the target frozen fails
// the recovery check, saying so, while the step's generator is not blamed
// for the drift the freeze caused.
func TestFaultNeverRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newFaultyTarget()
		tg.failsToStop = true
		res := run(t, faultScenario(tg, loadtest.Fault{Name: "target frozen 3s", Step: 1, At: 3 * time.Second, For: 3 * time.Second,
			Inject: tg.freeze, Clear: tg.unfreeze}, loadtest.RecoversWithin(5*time.Second)))
		sr := res.Steps[0]
		f := sr.Faults[0]
		assert.True(t, f.Detected)
		assert.True(t, f.Unrecovered)
		assert.Equal(t, result.Fail, sr.Verdict, "%v", sr.InvalidReasons())
		require.Len(t, sr.Violations, 1)
		assert.Contains(t, sr.Violations[0], "target frozen 3s not recovered by the hold's end")
		assert.ErrorIs(t, res.Err(), loadtest.ErrBreach)
	})
}

// TestFaultRecoveredLate: a target that fails for 4 s after the clear
// recovers 4 s after it: past a 2 s bound, within a 6 s one.
func TestFaultRecoveredLate(t *testing.T) {
	for _, tc := range []struct {
		bound time.Duration
		want  result.Verdict
	}{{2 * time.Second, result.Fail}, {6 * time.Second, result.Pass}} {
		t.Run(tc.bound.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tg := newFaultyTarget()
				clear := func(ctx context.Context) error {
					tg.mu.Lock()
					tg.failUntil = time.Now().Add(4 * time.Second)
					tg.mu.Unlock()
					return tg.unfreeze(ctx)
				}
				res := run(t, faultScenario(tg, loadtest.Fault{Name: "frozen, then failing", Step: 1, At: 2 * time.Second, For: time.Second,
					Inject: tg.freeze, Clear: clear}, loadtest.RecoversWithin(tc.bound)))
				f := res.Steps[0].Faults[0]
				t.Logf("%s", f)
				assert.InDelta(t, 4, f.RecoveredAfter.Seconds(), 1)
				assert.Greater(t, f.Failed-f.TimedOut, int64(300), "4 s of failures at 100/s")
				assert.Equal(t, tc.want, res.Steps[0].Verdict, "%v", res.Steps[0].Violations)
			})
		})
	}
}

// TestFaultNotSeen: a fault the load never meets is measured as not seen
// and recovered at once; the recovery check passes.
func TestFaultNotSeen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newFaultyTarget()
		nothing := func(context.Context) error { return nil }
		res := run(t, faultScenario(tg, loadtest.Fault{Name: "an unused replica killed", Step: 1, At: 2 * time.Second, Inject: nothing},
			loadtest.RecoversWithin(time.Second)))
		f := res.Steps[0].Faults[0]
		assert.False(t, f.Detected)
		assert.Equal(t, "not seen", f.Seen())
		assert.False(t, f.Unrecovered)
		assert.Less(t, f.RecoveredAfter, time.Second)
		assert.Zero(t, f.Failed)
		assert.Equal(t, result.Pass, res.Steps[0].Verdict)
	})
}

// TestFaultNotAppliedVoids: an Inject that fails leaves the step invalid,
// naming the fault and the error; its Clear still runs.
func TestFaultNotAppliedVoids(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newFaultyTarget()
		res := run(t, faultScenario(tg, loadtest.Fault{Name: "postgres paused", Step: 1, At: time.Second, For: time.Second,
			Inject: func(context.Context) error { return errors.New("no such container") }, Clear: tg.unfreeze},
			loadtest.RecoversWithin(time.Second)))
		sr := res.Steps[0]
		assert.Equal(t, result.Invalid, sr.Verdict)
		assert.Contains(t, sr.InvalidReasons()[0], "fault postgres paused: applying it: no such container")
		assert.Equal(t, 1, tg.clears)
		assert.ErrorIs(t, res.Err(), loadtest.ErrInvalid)
	})
}

// TestFaultClearedAfterInterrupt: a run interrupted while its fault is
// applied still clears it, and the step is incomplete.
func TestFaultClearedAfterInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newFaultyTarget()
		ctx, cancel := context.WithCancel(t.Context())
		s := faultScenario(tg, loadtest.Fault{Name: "target frozen 5s", Step: 1, At: 2 * time.Second, For: 5 * time.Second,
			Inject: func(ctx context.Context) error { time.AfterFunc(time.Second, cancel); return tg.freeze(ctx) }, Clear: tg.unfreeze})
		res, err := loadtest.Run(ctx, s)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 1, tg.clears, "cleared though interrupted")
		require.Len(t, res.Steps, 1)
		assert.Equal(t, result.Incomplete, res.Steps[0].Verdict)
		assert.False(t, res.Steps[0].Faults[0].Cleared.IsZero())
	})
}

// TestFaultValidation names the field and the fix of every malformed
// fault, before anything runs.
func TestFaultValidation(t *testing.T) {
	tg := newFaultyTarget()
	ok := loadtest.Fault{Name: "f", Step: 1, At: time.Second, For: time.Second, Inject: tg.freeze, Clear: tg.unfreeze}
	for _, tc := range []struct {
		name string
		mod  func(*loadtest.Fault, *loadtest.Scenario)
		want string
	}{
		{"no name", func(f *loadtest.Fault, _ *loadtest.Scenario) { f.Name = "" }, "Name is empty"},
		{"no inject", func(f *loadtest.Fault, _ *loadtest.Scenario) { f.Inject = nil }, "Inject is nil"},
		{"negative at", func(f *loadtest.Fault, _ *loadtest.Scenario) { f.At = -time.Second }, "give durations >= 0"},
		{"for without clear", func(f *loadtest.Fault, _ *loadtest.Scenario) { f.Clear = nil }, "Clear is nil"},
		{"step past the plan", func(f *loadtest.Fault, _ *loadtest.Scenario) { f.Step = 3 }, "Step is 3 but the plan has 1 steps"},
		{"negative step", func(f *loadtest.Fault, _ *loadtest.Scenario) { f.Step = -1 }, "give the step counted from 1"},
		{"past the hold", func(f *loadtest.Fault, _ *loadtest.Scenario) { f.At = 10 * time.Second }, "step 1 holds 12s, too short"},
		{"failures over 1", func(f *loadtest.Fault, _ *loadtest.Scenario) { f.Healthy.MaxFailures = 2 }, "MaxFailures in [0, 1]"},
		{"no timeline", func(_ *loadtest.Fault, s *loadtest.Scenario) { s.SeriesEvery = -1 }, "Faults are judged on the timeline"},
		{"sharded", func(_ *loadtest.Fault, s *loadtest.Scenario) { s.Shard = result.Shard{Index: 0, Count: 2} }, "run the faults' scenario in one process"},
		{"knee hold too short", func(f *loadtest.Fault, s *loadtest.Scenario) {
			f.Step = 0
			s.Plan = loadtest.Knee{Start: 10, Factor: 2, Max: 100, Precision: 0.25, Ramp: time.Second, Hold: 3 * time.Second}
		}, "step 0 holds 3s, too short"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ok
			s := faultScenario(tg, f)
			tc.mod(&f, &s)
			s.Faults = []loadtest.Fault{f}
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	s := faultScenario(tg, ok)
	assert.NoError(t, s.Validate())
}
