package loadtest

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Workload is a way of generating load: [Arrivals] (the open model, the
// default choice) or [Users] (modeled users, a closed model).
type Workload interface {
	// KindNames lists every request kind the workload records, so checks
	// can be validated before a run.
	KindNames() []string
	// Validate reports a malformed workload before anything runs.
	Validate() error

	start(ctx context.Context, env runEnv) driver
	model() string
}

// runEnv is what a workload needs from the run.
type runEnv struct {
	rec  *Recorder
	seed uint64
}

// driver is a running workload.
type driver interface {
	// ramp starts moving the load from its current level to level over d
	// and returns at once.
	ramp(level float64, d time.Duration)
	// inFlight returns the requests begun and not yet answered.
	inFlight() int64
	// stop ends all load, abandons what is in flight and waits for every
	// goroutine of the workload to return.
	stop()
}

// errStopped is the cause with which a run cancels its workload.
var errStopped = errors.New("loadtest: run stopped")

// rampState is a linear change of level from From to To, starting at Start
// and lasting Dur.
type rampState struct {
	from, to float64
	start    time.Time
	dur      time.Duration
}

// at returns the level at time t.
func (r rampState) at(t time.Time) float64 {
	if r.dur <= 0 || !t.Before(r.start.Add(r.dur)) {
		return r.to
	}
	if t.Before(r.start) {
		return r.from
	}
	f := float64(t.Sub(r.start)) / float64(r.dur)
	return r.from + (r.to-r.from)*f
}

// end returns when the ramp reaches its level.
func (r rampState) end() time.Time { return r.start.Add(r.dur) }

// level is a mutex-guarded ramp shared by a driver's goroutines.
type level struct {
	mu      sync.Mutex
	r       rampState
	changed chan struct{} // closed and replaced on every change
}

func newLevel() *level { return &level{changed: make(chan struct{})} }

func (l *level) set(to float64, d time.Duration, now time.Time) {
	l.mu.Lock()
	l.r = rampState{from: l.r.at(now), to: to, start: now, dur: d}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *level) get() (rampState, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r, l.changed
}
