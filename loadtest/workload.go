package loadtest

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Workload is a way of generating load: [Arrivals] (the open model, the
// default choice), [Users] (modeled users, a closed model), or one of your
// own. A workload records its requests through the [Recorder] it is
// started with: [Recorder.Request] for a request (offered load, latency
// from its intended send time), [Recorder.Begin] or [Recorder.Record] for
// observations.
type Workload interface {
	// KindNames lists every request kind the workload records, so checks
	// can be validated before a run.
	KindNames() []string
	// Validate reports a malformed workload before anything runs.
	Validate() error
	// Start begins the workload at level 0 and returns it running; the
	// run then moves it from level to level. seed makes its random
	// choices reproducible. It must not block.
	Start(ctx context.Context, rec *Recorder, seed uint64) Driver
}

// Driver is a running workload.
type Driver interface {
	// Ramp starts moving the load from its current level to level
	// (arrivals per second, users, or the workload's own unit) over d and
	// returns at once.
	Ramp(level float64, d time.Duration)
	// InFlight returns the requests begun and not yet answered.
	InFlight() int64
	// Stop ends all load, abandons what is in flight and waits for every
	// goroutine of the workload to return.
	Stop()
}

// modelOf names a workload's model in results: "arrivals" (open),
// "users" (closed), or what a workload's Model method says.
func modelOf(w Workload) string {
	if m, ok := w.(interface{ Model() string }); ok {
		return m.Model()
	}
	return "custom"
}

// runEnv is what the built-in workloads keep of their start.
type runEnv struct {
	rec  *Recorder
	seed uint64
}

// errStopped is the cause with which a run cancels its workload.
var errStopped = errors.New("loadtest: run stopped")

// rampState is a linear change of level from From to To, starting at Start
// and lasting Dur.
type rampState struct {
	from, to float64
	start    time.Time
	dur      time.Duration
	// prev is the ramp before this one (without its own prev), in force
	// until start: a ramp set ahead leaves the one before running.
	prev *rampState
}

// at returns the level at time t: From before the ramp starts (a ramp may be
// set ahead of its start, as aligned shards do), To once it has ended.
func (r rampState) at(t time.Time) float64 {
	if t.Before(r.start) {
		return r.from
	}
	if r.dur <= 0 || !t.Before(r.start.Add(r.dur)) {
		return r.to
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

// set starts a ramp to to over d at at, which may lie ahead: until then the
// level stays what the previous ramp makes it at at.
func (l *level) set(to float64, d time.Duration, at time.Time) {
	l.mu.Lock()
	prev := l.r
	prev.prev = nil
	l.r = rampState{from: l.r.at(at), to: to, start: at, dur: d, prev: &prev}
	close(l.changed)
	l.changed = make(chan struct{})
	l.mu.Unlock()
}

func (l *level) get() (rampState, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.r, l.changed
}
