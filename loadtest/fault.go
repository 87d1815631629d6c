package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest/result"
)

type (
	// Health says when a timeline window is healthy, for judging a
	// fault's detection and recovery; see [result.Health].
	Health = result.Health
	// FaultResult is what a fault did in a step; see [result.FaultResult].
	FaultResult = result.FaultResult
)

// Fault is a failure injected into the system under test during a step's
// hold — a database paused, a replica killed, an upstream resetting its
// connections — to measure what the load saw of it and how soon the
// system served again as before. The run calls Inject At into the hold
// and Clear For after it, and reads from the step's timeline windows (see
// [Scenario.SeriesEvery]) when the load first saw it (the first unhealthy
// window) and when it recovered (the first of Healthy.Windows healthy
// windows in a row after the clear); see [result.FaultResult] and
// [RecoversWithin]. package fixtures makes them of a stack's components:
// stack.Component("postgres").PausedFor(1, 3*time.Second, 3*time.Second).
//
// A fault's step is strained: a drift of the offered load during it is
// the users' reaction to the fault, not a workload out of steady state.
// An Inject or Clear that fails leaves the step invalid (it did not
// measure the fault planned). Clear always runs once Inject has, even
// when the run is interrupted, with two minutes of its own.
type Fault struct {
	// Name says what the fault is, for the result: "postgres paused 3s".
	Name string
	// Step is the step, counted from 1, in whose hold the fault falls; 0
	// means every step's (idle steps aside).
	Step int
	// At is when, from the hold's start, Inject is called.
	At time.Duration
	// For is how long after Inject returns Clear is called; 0 calls it at
	// once. It needs a Clear.
	For time.Duration
	// Inject applies the fault; Clear, when set, undoes it. A fault
	// without Clear (a kill) is one the system must recover from by
	// itself: its recovery counts from the injection.
	Inject func(ctx context.Context) error
	Clear  func(ctx context.Context) error
	// Healthy says when a window is healthy; zero fields take the
	// defaults of [result.Health].
	Healthy Health
}

// clearBudget bounds a fault's Clear, which runs even after an interrupt.
const clearBudget = 2 * time.Minute

// validateFaults reports every malformed fault, given the plan (whose
// holds each fault must fit in) and the timeline window.
func validateFaults(s *Scenario) error {
	if len(s.Faults) == 0 {
		return nil
	}
	var errs []error
	if s.SeriesEvery < 0 {
		errs = append(errs, fmt.Errorf("scenario: SeriesEvery is %v but Faults are judged on the timeline's windows; leave it 0 (1 s windows) or give a window", s.SeriesEvery))
	}
	if s.Shard.Count > 1 {
		errs = append(errs, errors.New("scenario: Faults in a sharded run: each shard would inject them; run the faults' scenario in one process"))
	}
	every := s.SeriesEvery
	if every <= 0 {
		every = time.Second
	}
	var holds []time.Duration // by step, from 0; nil: any step (a knee's probes)
	var idle []bool
	anyHold := time.Duration(0)
	if s.Plan != nil {
		info := describePlan(s.Plan)
		for _, st := range info.Steps {
			holds = append(holds, st.Hold)
			idle = append(idle, st.Level == 0)
		}
		if info.Knee != nil {
			anyHold = info.Knee.Hold
		}
	}
	for i, f := range s.Faults {
		field := fmt.Sprintf("scenario: Faults[%d] (%q)", i, f.Name)
		if f.Name == "" {
			errs = append(errs, fmt.Errorf("%s: Name is empty; say what the fault is, such as \"postgres paused 3s\"", field))
		}
		if f.Inject == nil {
			errs = append(errs, fmt.Errorf("%s: Inject is nil; give the function that applies the fault (fixtures' Component.PausedFor makes one)", field))
		}
		if f.At < 0 || f.For < 0 {
			errs = append(errs, fmt.Errorf("%s: At %v, For %v; give durations >= 0 from the hold's start", field, f.At, f.For))
		}
		if f.For > 0 && f.Clear == nil {
			errs = append(errs, fmt.Errorf("%s: For is %v but Clear is nil; give the function that undoes the fault, or For 0 for a fault the system must recover from by itself", field, f.For))
		}
		h := f.Healthy
		if h.Windows < 0 || h.MaxP95 < 0 || math.IsNaN(h.MaxFailures) || h.MaxFailures < 0 || h.MaxFailures > 1 {
			errs = append(errs, fmt.Errorf("%s: Healthy is {Windows %d, MaxFailures %v, MaxP95 %v}; give Windows >= 0, MaxFailures in [0, 1], MaxP95 >= 0 (0s for the defaults)", field, h.Windows, h.MaxFailures, h.MaxP95))
		}
		need := f.At + f.For + time.Duration(h.WithDefaults().Windows)*every
		check := func(step int, hold time.Duration) {
			if hold > 0 && need > hold {
				errs = append(errs, fmt.Errorf("%s: step %d holds %v, too short for the fault at %v for %v and %d healthy windows of %v after it; hold longer or inject sooner",
					field, step, hold, f.At, f.For, h.WithDefaults().Windows, every))
			}
		}
		switch {
		case f.Step < 0:
			errs = append(errs, fmt.Errorf("%s: Step is %d; give the step counted from 1, or 0 for every step", field, f.Step))
		case holds == nil:
			check(f.Step, anyHold)
		case f.Step > len(holds):
			errs = append(errs, fmt.Errorf("%s: Step is %d but the plan has %d steps", field, f.Step, len(holds)))
		case f.Step > 0 && idle[f.Step-1]:
			errs = append(errs, fmt.Errorf("%s: step %d is idle (level 0): no request would see the fault; give a step with load", field, f.Step))
		case f.Step > 0:
			check(f.Step, holds[f.Step-1])
		default:
			for j, hold := range holds {
				if !idle[j] {
					check(j+1, hold)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// faultRun is the faults of one step's hold, running.
type faultRun struct {
	wg  sync.WaitGroup
	res []result.FaultResult
}

// startFaults starts the faults of step i (from 0), whose hold began at
// start; nil when it has none.
func (r *runner) startFaults(ctx context.Context, i int, step Step, start time.Time) *faultRun {
	if step.Level == 0 {
		return nil
	}
	var faults []Fault
	for _, f := range r.s.Faults {
		if f.Step == 0 || f.Step == i+1 {
			faults = append(faults, f)
		}
	}
	if len(faults) == 0 {
		return nil
	}
	fr := &faultRun{res: make([]result.FaultResult, len(faults))}
	for k, f := range faults {
		fr.res[k] = result.FaultResult{Name: f.Name, At: f.At, For: f.For, Healthy: f.Healthy.WithDefaults()}
		fr.wg.Add(1)
		go func() {
			defer fr.wg.Done()
			r.inject(ctx, i, f, start, &fr.res[k])
		}()
	}
	return fr
}

// inject applies f At after start and clears it For after that, recording
// both in res. Once applied, it is cleared even when ctx ends.
func (r *runner) inject(ctx context.Context, i int, f Fault, start time.Time, res *result.FaultResult) {
	if !sleepUntil(ctx, start.Add(f.At)) {
		return // interrupted before: never applied
	}
	err := f.Inject(ctx)
	res.Injected = time.Now()
	if err != nil {
		res.Error = "applying it: " + err.Error()
		r.s.Logf("step %d: fault %s: %v", i+1, f.Name, err)
	} else {
		r.s.Logf("step %d: fault %s applied", i+1, f.Name)
	}
	if f.Clear == nil {
		return
	}
	sleep(ctx, f.For) // cut short by an interrupt: cleared at once
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), clearBudget)
	defer cancel()
	if err := f.Clear(cctx); err != nil {
		if res.Error != "" {
			res.Error += "; "
		}
		res.Error += "clearing it: " + err.Error()
		r.s.Logf("step %d: fault %s: clearing it: %v", i+1, f.Name, err)
		return
	}
	res.Cleared = time.Now()
	r.s.Logf("step %d: fault %s cleared", i+1, f.Name)
}

// wait waits for every fault's Clear and returns their results.
func (fr *faultRun) wait() []result.FaultResult {
	if fr == nil {
		return nil
	}
	fr.wg.Wait()
	return fr.res
}

// judgeFaults measures each fault of sr on the timeline tl, over the
// windows of the hold [start, end], and names in the step's reasons the
// faults not applied as planned.
func judgeFaults(sr *StepResult, tl *result.Timeline, start, end time.Time) {
	for k := range sr.Faults {
		f := &sr.Faults[k]
		switch {
		case f.Error != "":
			sr.Self.Reasons = append(sr.Self.Reasons, fmt.Sprintf("fault %s: %s: the step did not measure the fault planned", f.Name, f.Error))
			continue
		case f.Injected.IsZero():
			continue // interrupted before it: the step is incomplete
		}
		if tl == nil {
			sr.Self.Reasons = append(sr.Self.Reasons, fmt.Sprintf("fault %s: no timeline to judge it on", f.Name))
			continue
		}
		measureFault(f, tl, start, end)
	}
}

// measureFault reads f's detection, recovery and failures from the
// windows of tl that end within the hold [start, end].
func measureFault(f *result.FaultResult, tl *result.Timeline, start, end time.Time) {
	h := f.Healthy.WithDefaults()
	since := func(t time.Time) float64 { return t.Sub(tl.Start).Seconds() }
	every := tl.Every.Seconds()
	from, to := since(start), since(end)+every/100
	inj := since(f.Injected)
	ref := inj // recovery counts from the clear, or the injection
	if !f.Cleared.IsZero() {
		ref = since(f.Cleared)
	}
	secs := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)).Round(time.Millisecond) }
	var seen []int // windows from the injection on, for the counts
	run, first := 0, -1
	for j, t := range tl.T {
		ws := t - every
		if j > 0 {
			ws = tl.T[j-1]
		}
		if t <= inj || ws < from-every/100 {
			continue // before the fault, or not of this hold
		}
		if t > to {
			break
		}
		seen = append(seen, j)
		healthy := windowHealthy(tl, j, h)
		if !f.Detected && !healthy {
			f.Detected, f.DetectedAfter = true, secs(t-inj)
		}
		if ws < ref-every/100 {
			continue // recovery counts from the clear on
		}
		switch {
		case !healthy:
			run = 0
		case run == 0:
			run, first = 1, j
		default:
			run++
		}
		if run >= h.Windows {
			break
		}
	}
	if run < h.Windows {
		f.Unrecovered, first = true, -1
	} else {
		ws := tl.T[first] - every
		if first > 0 {
			ws = tl.T[first-1]
		}
		f.RecoveredAfter = secs(max(ws-ref, 0))
	}
	for _, j := range seen {
		if j == first {
			break
		}
		f.Answered += windowCount(tl, j)
		f.Failed += tl.Errors[j]
		if j < len(tl.Timeouts) {
			f.TimedOut += tl.Timeouts[j]
		}
	}
}

// windowCount returns the requests that ended in window j of tl.
func windowCount(tl *result.Timeline, j int) int64 {
	var count int64
	for _, k := range tl.Kinds {
		if !k.Observed && j < len(k.Count) {
			count += k.Count[j]
		}
	}
	return count
}

// windowHealthy judges window j of tl by h.
func windowHealthy(tl *result.Timeline, j int, h Health) bool {
	var p95 int64
	for _, k := range tl.Kinds {
		if !k.Observed && j < len(k.P95) {
			p95 = max(p95, k.P95[j])
		}
	}
	count, failed := windowCount(tl, j), tl.Errors[j]
	switch {
	case count == 0 && tl.InFlight[j] > 0:
		return false // nothing answered, requests waiting: frozen
	case count > 0 && float64(failed) > h.MaxFailures*float64(count):
		return false
	case tl.Answered[j] < tl.Offered[j]/2:
		return false
	case h.MaxP95 > 0 && time.Duration(p95)*time.Microsecond > h.MaxP95:
		return false
	}
	return true
}

// RecoversWithin checks that the system recovers from every fault of a
// step (see [Fault]) within d of the fault's clear (of its injection, for
// a fault without one): Healthy.Windows healthy windows in a row begin by
// then. A step without faults passes; a fault not applied leaves the step
// unjudged.
func RecoversWithin(d time.Duration) Check { return recoversCheck{d} }

type recoversCheck struct{ d time.Duration }

func (c recoversCheck) String() string {
	return fmt.Sprintf("recovers from every fault within %v", c.d)
}

func (c recoversCheck) Validate(_ []string) error {
	if c.d <= 0 {
		return fmt.Errorf("check %q: give a duration > 0", c)
	}
	return nil
}

func (c recoversCheck) Evaluate(s *StepResult) error {
	var errs []error
	for _, f := range s.Faults {
		switch {
		case !f.Applied():
			errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInsufficientData, c, f))
		case f.Unrecovered:
			errs = append(errs, fmt.Errorf("%s: %s not recovered by the hold's end (%s; %s failed)", c, f.Name, f.Healthy, f.FailedText()))
		case f.RecoveredAfter > c.d:
			errs = append(errs, fmt.Errorf("%s: %s recovered after %v (%s failed)", c, f.Name, f.RecoveredAfter, f.FailedText()))
		}
	}
	return errors.Join(errs...)
}
