package result

import (
	"fmt"
	"time"
)

// Timeline is a run second by second: what was offered and answered, the
// latency of every kind, and every sampled series, so that a report can
// show when inside a hold latency rose or memory climbed. Window figures
// are stored column by column, one entry per window, to keep results small.
type Timeline struct {
	// Every is the length of a window.
	Every time.Duration `json:"every"`
	// Start is the instant offsets count from: the run's start.
	Start time.Time `json:"start"`
	// T is each window's end, in seconds since Start.
	T []float64 `json:"t"`
	// Offered is requests begun per second in each window; Answered,
	// requests answered (any outcome but dropped) per second; observed
	// kinds count in neither.
	Offered  []float64 `json:"offered_per_s"`
	Answered []float64 `json:"answered_per_s"`
	// Errors and Dropped count the requests of each window that ended in
	// an error (any outcome but OK and dropped) or were dropped.
	Errors  []int64 `json:"errors"`
	Dropped []int64 `json:"dropped"`
	// Timeouts counts, of Errors, the requests that timed out.
	Timeouts []int64 `json:"timeouts,omitempty"`
	// InFlight is the requests begun and not yet answered at each
	// window's end.
	InFlight []int64 `json:"in_flight"`
	// Kinds holds each kind's figures per window.
	Kinds []*KindSeries `json:"kinds"`
	// Phases are the run's ramps, holds and drains, in order.
	Phases []Phase `json:"phases"`
	// Resources is every sampled series (container CPU and memory,
	// database connections, the generator's CPU, a target's metrics), each
	// with its own sampling instants.
	Resources []ResourceSeries `json:"resources,omitempty"`
}

// KindSeries is one kind's figures per window of a Timeline. A sample
// belongs to the window in which it ended.
type KindSeries struct {
	Kind string `json:"kind"`
	// Observed marks samples observed rather than requested (fan-out
	// delays).
	Observed bool `json:"observed,omitempty"`
	// Count is samples ended in the window, any outcome; Errors those
	// ending in neither OK nor dropped.
	Count  []int64 `json:"count"`
	Errors []int64 `json:"errors"`
	// P50, P95 and P99 are latency percentiles in microseconds over the
	// window's answered samples; 0 when it had none.
	P50 []int64 `json:"p50_us"`
	P95 []int64 `json:"p95_us"`
	P99 []int64 `json:"p99_us"`
}

// Phase is one part of a step: its ramp, its hold (the only time
// measured), its drain, or a return to zero load.
type Phase struct {
	// Step is the step's index, from 0.
	Step int `json:"step"`
	// Name is "ramp", "settle" (waiting for the ramp's users to finish
	// starting), "hold", "drain" or "zero".
	Name string `json:"name"`
	// Level is the step's load level.
	Level float64 `json:"level"`
	// From and To bound the phase in seconds since the timeline's Start.
	From float64 `json:"from"`
	To   float64 `json:"to"`
}

// String names the phase as progress lines do: "step 2 hold at 100".
func (p Phase) String() string {
	switch p.Name {
	case "ramp":
		return fmt.Sprintf("step %d ramp to %g", p.Step+1, p.Level)
	case "hold":
		return fmt.Sprintf("step %d hold at %g", p.Step+1, p.Level)
	case "zero":
		return fmt.Sprintf("step %d back to zero", p.Step+1)
	case "settle":
		return fmt.Sprintf("step %d users starting at %g", p.Step+1, p.Level)
	}
	return fmt.Sprintf("step %d %s", p.Step+1, p.Name)
}

// ResourceSeries is one sampled series over the run.
type ResourceSeries struct {
	Component string  `json:"component"`
	Metric    string  `json:"metric"`
	Unit      string  `json:"unit"`
	Limit     float64 `json:"limit,omitempty"`
	Harness   bool    `json:"harness,omitempty"`
	// T is each sample's instant in seconds since the timeline's Start;
	// V its value in Unit.
	T []float64 `json:"t"`
	V []float64 `json:"v"`
}

// Len returns the number of windows.
func (tl *Timeline) Len() int { return len(tl.T) }

// Kind returns the named kind's series, or nil.
func (tl *Timeline) Kind(name string) *KindSeries {
	for _, k := range tl.Kinds {
		if k.Kind == name {
			return k
		}
	}
	return nil
}

// Resource returns the series component/metric, or nil.
func (tl *Timeline) Resource(component, metric string) *ResourceSeries {
	for i := range tl.Resources {
		if r := &tl.Resources[i]; r.Component == component && r.Metric == metric {
			return r
		}
	}
	return nil
}

// PhaseAt returns the phase at t seconds since Start, and false outside
// every phase (before the first ramp, after the last drain).
func (tl *Timeline) PhaseAt(t float64) (Phase, bool) {
	for _, p := range tl.Phases {
		if t >= p.From && t < p.To {
			return p, true
		}
	}
	return Phase{}, false
}
