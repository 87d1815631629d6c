package loadtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Knee is a plan that searches for the highest passing level: "ramp until it
// breaks, then binary-search to ±Precision". It probes Start, then grows by
// Factor while probes pass (up to Max); once a probe fails it bisects
// between the highest pass and the lowest failure until they are within
// Precision of each other. Every probe starts from zero load, ramps over
// Ramp and holds for Hold; with Trials > 1 each level is probed that many
// times and takes the majority verdict.
//
// An invalid probe (the generator was the bottleneck) stops the search: a
// knee found beyond it would be the generator's, not the target's.
type Knee struct {
	// Start is the first level probed; > 0.
	Start float64 `json:"start"`
	// Factor multiplies the level while probes pass; > 1, e.g. 1.5.
	Factor float64 `json:"factor"`
	// Precision is the relative gap between the highest pass and the
	// lowest failure at which the search stops; default 0.1 (±10%).
	Precision float64 `json:"precision"`
	// Max is the highest level to probe; > Start.
	Max float64 `json:"max"`
	// MaxProbes bounds the levels probed; default 12.
	MaxProbes int `json:"max_probes"`
	// Granularity rounds every level to a multiple of it; default 1 (whole
	// users, whole arrivals per second).
	Granularity float64 `json:"granularity"`
	// Ramp and Hold are each probe's.
	Ramp time.Duration `json:"ramp"`
	Hold time.Duration `json:"hold"`
	// Trials is how many times each level is probed; default 1.
	Trials int `json:"trials"`
}

func (k Knee) withDefaults() Knee {
	if k.Precision == 0 {
		k.Precision = 0.1
	}
	if k.MaxProbes == 0 {
		k.MaxProbes = 12
	}
	if k.Granularity == 0 {
		k.Granularity = 1
	}
	if k.Trials == 0 {
		k.Trials = 1
	}
	return k
}

// Validate reports malformed parameters, each naming the field and the fix.
func (k Knee) Validate() error {
	k = k.withDefaults()
	var errs []error
	bad := func(f string, args ...any) { errs = append(errs, fmt.Errorf("plan: knee "+f, args...)) }
	if !(k.Start > 0) {
		bad("Start is %v; give the first level to probe (> 0)", k.Start)
	}
	if !(k.Factor > 1) || math.IsInf(k.Factor, 0) {
		bad("Factor is %v; give a growth factor > 1, e.g. 1.5", k.Factor)
	}
	if !(k.Precision > 0 && k.Precision < 1) {
		bad("Precision is %v; give a fraction in (0, 1), e.g. 0.1 for ±10%%", k.Precision)
	}
	if !(k.Max >= k.Start) {
		bad("Max is %v; give the highest level to probe, >= Start (%v)", k.Max, k.Start)
	}
	if k.MaxProbes < 1 || k.Trials < 1 {
		bad("MaxProbes %d and Trials %d must be >= 1", k.MaxProbes, k.Trials)
	}
	if !(k.Granularity > 0) {
		bad("Granularity is %v; give a positive step, e.g. 1", k.Granularity)
	}
	errs = append(errs, validateStep(Step{Level: k.Start, Ramp: k.Ramp, Hold: k.Hold}, "plan: knee probe", false))
	return errors.Join(errs...)
}

// kneeState is what the probes so far say.
type kneeState struct {
	levels  []float64 // in probe order, distinct
	verdict map[float64]result.Verdict
	trials  map[float64]int
	invalid *StepResult
	pass    float64 // highest passing level below every failure
	fail    float64 // lowest failing level; 0 when none
}

func (k Knee) state(done []*StepResult) kneeState {
	st := kneeState{verdict: map[float64]result.Verdict{}, trials: map[float64]int{}}
	tally := map[float64][2]int{}
	for _, s := range done {
		l := s.Step.Level
		if !slices.Contains(st.levels, l) {
			st.levels = append(st.levels, l)
		}
		st.trials[l]++
		t := tally[l]
		switch s.Verdict {
		case result.Pass:
			t[0]++
		case result.Fail:
			t[1]++
		default:
			if st.invalid == nil {
				st.invalid = s
			}
		}
		tally[l] = t
	}
	for l, t := range tally {
		if t[0] > t[1] {
			st.verdict[l] = result.Pass
		} else if t[1] > 0 {
			st.verdict[l] = result.Fail
			if st.fail == 0 || l < st.fail {
				st.fail = l
			}
		}
	}
	for l, v := range st.verdict {
		if v == result.Pass && (st.fail == 0 || l < st.fail) && l > st.pass {
			st.pass = l
		}
	}
	return st
}

// MaxLevel implements Plan.
func (k Knee) MaxLevel() float64 { return k.Max }

// Next implements Plan.
func (k Knee) Next(done []*StepResult) (Step, bool) {
	k = k.withDefaults()
	lvl, _ := k.decide(done)
	if lvl == 0 {
		return Step{}, false
	}
	return Step{Level: lvl, Ramp: k.Ramp, Hold: k.Hold, FromZero: true}, true
}

// Conclude says why the search stopped and what it found.
func (k Knee) Conclude(done []*StepResult) string {
	_, why := k.withDefaults().decide(done)
	return why
}

// decide returns the next level to probe, or 0 and why the search is over.
func (k Knee) decide(done []*StepResult) (float64, string) {
	st := k.state(done)
	if st.invalid != nil {
		return 0, fmt.Sprintf("search stopped: the probe at %g was %s (%s); a knee beyond it would be the harness's, not the target's — mend that first (the reason says how), then search again",
			st.invalid.Step.Level, st.invalid.Verdict, format.FirstOr(st.invalid.InvalidReasons(), "interrupted"))
	}
	if n := len(st.levels); n > 0 {
		last := st.levels[n-1]
		if st.trials[last] < k.Trials {
			return last, ""
		}
	}
	round := func(v float64) float64 { return math.Max(k.Granularity, math.Round(v/k.Granularity)*k.Granularity) }
	found := func() string {
		return fmt.Sprintf("knee between %g (pass) and %g (fail), within %g%%", st.pass, st.fail, k.Precision*100)
	}
	var next float64
	switch {
	case len(st.levels) == 0:
		next = round(k.Start)
	case st.fail == 0: // still growing
		last := slices.Max(st.levels)
		if last >= k.Max {
			return 0, fmt.Sprintf("no breach up to the maximum level %g; capacity is at least %g — raise Max to search further", k.Max, st.pass)
		}
		next = round(math.Min(last*k.Factor, k.Max))
	case st.pass == 0: // failing from the start: go down
		next = round(st.fail / k.Factor)
		if next >= st.fail {
			return 0, fmt.Sprintf("every probe failed, down to %g; the target does not pass at the lowest level", st.fail)
		}
	default:
		if (st.fail-st.pass)/st.pass <= k.Precision {
			return 0, found()
		}
		next = round((st.pass + st.fail) / 2)
		if next <= st.pass || next >= st.fail {
			return 0, found() + " (granularity reached)"
		}
	}
	if len(st.levels) >= k.MaxProbes {
		if st.fail > 0 && st.pass > 0 {
			return 0, fmt.Sprintf("probe budget of %d spent; knee between %g (pass) and %g (fail)", k.MaxProbes, st.pass, st.fail)
		}
		return 0, fmt.Sprintf("probe budget of %d spent before a pass and a failure bracketed the knee; raise MaxProbes or Factor", k.MaxProbes)
	}
	return next, ""
}

// Conclude says why the ladder stopped.
func (l Ladder) Conclude(done []*StepResult) string {
	if n := len(done); n > 0 && n < len(l.Steps) && done[n-1].Verdict != result.Pass {
		return fmt.Sprintf("ladder stopped after step %d (level %g) was %s", n, done[n-1].Step.Level, done[n-1].Verdict)
	}
	return fmt.Sprintf("ran %d of %d steps", len(done), len(l.Steps))
}
