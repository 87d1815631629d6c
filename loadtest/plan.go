package loadtest

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// validateStep reports a step no plan may hold; field names it. Level 0
// (the idle row) is a ladder's to allow: idle says whether it may.
func validateStep(s Step, field string, idle bool) error {
	switch {
	case idle && s.Level == 0:
	case math.IsNaN(s.Level) || math.IsInf(s.Level, 0) || s.Level <= 0:
		if idle {
			return fmt.Errorf("%s.Level is %v; give a positive load level (arrivals/s or users), or 0 for the idle row", field, s.Level)
		}
		return fmt.Errorf("%s.Level is %v; give a positive load level (arrivals/s or users)", field, s.Level)
	case s.Ramp < 0:
		return fmt.Errorf("%s.Ramp is %v; give a duration >= 0", field, s.Ramp)
	case s.Hold <= 0:
		return fmt.Errorf("%s.Hold is %v; give a positive hold (the step is measured only while it holds)", field, s.Hold)
	case math.IsNaN(s.LeakMatters) || math.IsInf(s.LeakMatters, 0) || s.LeakMatters < 0:
		return fmt.Errorf("%s.LeakMatters is %v; give the slowest memory growth that is a leak, in bytes per hour (>= 0; 0: any sure growth)", field, s.LeakMatters)
	case s.LeakMatters > 0 && !s.Soak:
		return fmt.Errorf("%s.LeakMatters is set on a step that is no soak; set Soak too (loadtest.Soak builds one), or leave LeakMatters 0", field)
	}
	return nil
}

// Plan decides the steps of a run. [Ladder] is a fixed list; [Knee] searches
// for the highest passing level.
type Plan interface {
	// Next returns the next step given the steps measured so far, or false
	// when the plan is complete. It also returns why it stopped.
	Next(done []*StepResult) (Step, bool)
	// Validate reports a malformed plan before anything runs.
	Validate() error
	// MaxLevel returns the highest level the plan may reach, so that what
	// the generator needs at the top can be checked before it starts.
	MaxLevel() float64
}

// Ladder is a step ladder: its steps run in order, each ramping from the
// level of the step before. By default the ladder stops after the first step
// that fails its checks or is invalid; set ContinueOnFailure to run every
// step regardless.
//
// A step of Level 0 is an idle row (seed 004's "idle" line): the stack
// started, seeded and holding what it holds between requests — its pools,
// its caches — with no load, so that what the load costs can be read
// against what the stack costs at rest. Its hold measures the components'
// CPU and memory; only checks that judge an idle step (a component that
// stopped; see [IdleCheck]) apply to it, and it is no level of capacity.
// Levels(ramp, hold, 0, 250, 500) begins with one.
type Ladder struct {
	Steps             []Step
	ContinueOnFailure bool
}

// Levels returns a ladder with one step per level, each ramping over ramp
// and holding for hold: Levels(60*time.Second, 180*time.Second, 250, 500,
// 1000) is the helpdesk harness's ladder.
func Levels(ramp, hold time.Duration, levels ...float64) Ladder {
	l := Ladder{}
	for _, v := range levels {
		l.Steps = append(l.Steps, Step{Level: v, Ramp: ramp, Hold: hold})
	}
	return l
}

// Validate reports an empty ladder or a malformed step.
func (l Ladder) Validate() error {
	if len(l.Steps) == 0 {
		return errors.New("plan: the ladder has no steps; give at least one Step{Level, Ramp, Hold}")
	}
	var errs []error
	for i, s := range l.Steps {
		errs = append(errs, validateStep(s, fmt.Sprintf("plan: Steps[%d]", i), true))
	}
	return errors.Join(errs...)
}

// MaxLevel implements Plan.
func (l Ladder) MaxLevel() float64 {
	m := 0.0
	for _, s := range l.Steps {
		m = max(m, s.Level)
	}
	return m
}

// Next implements Plan.
func (l Ladder) Next(done []*StepResult) (Step, bool) {
	if len(done) >= len(l.Steps) {
		return Step{}, false
	}
	if n := len(done); n > 0 && !l.ContinueOnFailure && done[n-1].Verdict != result.Pass {
		return Step{}, false
	}
	return l.Steps[len(done)], true
}

func describePlan(p Plan) result.PlanInfo {
	switch p := p.(type) {
	case Ladder:
		return result.PlanInfo{Type: "ladder", Steps: p.Steps}
	case *Ladder:
		return result.PlanInfo{Type: "ladder", Steps: p.Steps}
	case Knee:
		k := result.KneeParams(p)
		return result.PlanInfo{Type: "knee", Knee: &k}
	case *Knee:
		k := result.KneeParams(*p)
		return result.PlanInfo{Type: "knee", Knee: &k}
	}
	return result.PlanInfo{Type: fmt.Sprintf("%T", p)}
}
