package loadtest

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
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

// timelineLog builds a run's Timeline window by window.
type timelineLog struct {
	tl        Timeline
	kinds     map[string]*KindSeries
	requested map[string]bool // kinds whose samples were requests
	phases    []Phase         // open phase last, To unset
}

func newTimelineLog(start time.Time, every time.Duration) *timelineLog {
	return &timelineLog{tl: Timeline{Every: every, Start: start}, kinds: map[string]*KindSeries{}, requested: map[string]bool{}}
}

func (l *timelineLog) since(t time.Time) float64 {
	return math.Round(t.Sub(l.tl.Start).Seconds()*1000) / 1000
}

// phase closes the open phase at now and opens the next one.
func (l *timelineLog) phase(now time.Time, step int, name string, level float64) {
	l.closePhase(now)
	l.phases = append(l.phases, Phase{Step: step, Name: name, Level: level, From: l.since(now), To: -1})
}

func (l *timelineLog) closePhase(now time.Time) {
	if n := len(l.phases); n > 0 && l.phases[n-1].To < 0 {
		l.phases[n-1].To = l.since(now)
	}
}

// covering names the phases that overlap [from, to]: "step 1 ramp to 50 →
// step 1 hold at 50" for a window that saw the hold begin.
func (l *timelineLog) covering(from, to time.Time) string {
	a, b := l.since(from), l.since(to)
	var names []string
	for _, p := range l.phases {
		end := p.To
		if end < 0 {
			end = math.Inf(1)
		}
		if p.From < b && end > a {
			names = append(names, p.String())
		}
	}
	if len(names) == 0 {
		return "starting"
	}
	if len(names) > 2 {
		names = []string{names[0], "…", names[len(names)-1]}
	}
	return strings.Join(names, " → ")
}

// liveWindow is what the live stats held over one window.
type liveWindow struct {
	names    []string
	hists    []*hdrhistogram.Histogram
	counts   [][NumOutcomes]int64
	begun    []int64
	requests []bool
}

// add appends one window ending at end, of secs seconds.
func (l *timelineLog) add(end time.Time, secs float64, w liveWindow, inFlight int64) {
	n := len(l.tl.T)
	l.tl.T = append(l.tl.T, l.since(end))
	var begun, answered, errs, dropped int64
	for i, name := range w.names {
		c := w.counts[i]
		var total int64
		for _, x := range c {
			total += x
		}
		ks := l.kinds[name]
		if ks == nil {
			if total == 0 && w.begun[i] == 0 {
				continue // not seen yet: added when it is
			}
			ks = &KindSeries{Kind: name, Count: make([]int64, n), Errors: make([]int64, n),
				P50: make([]int64, n), P95: make([]int64, n), P99: make([]int64, n)}
			l.kinds[name] = ks
			l.tl.Kinds = append(l.tl.Kinds, ks)
		}
		kerr := total - c[OK] - c[Dropped]
		if w.isRequest(i) {
			l.requested[name] = true
			begun += w.begun[i]
			answered += total - c[Dropped]
			errs += kerr
			dropped += c[Dropped]
		}
		h := w.hists[i]
		var p50, p95, p99 int64
		if h.TotalCount() > 0 {
			p50, p95, p99 = h.ValueAtPercentile(50), h.ValueAtPercentile(95), h.ValueAtPercentile(99)
		}
		ks.Count = append(ks.Count, total)
		ks.Errors = append(ks.Errors, kerr)
		ks.P50 = append(ks.P50, p50)
		ks.P95 = append(ks.P95, p95)
		ks.P99 = append(ks.P99, p99)
	}
	rate := func(x int64) float64 {
		if secs <= 0 {
			return 0
		}
		return math.Round(float64(x)/secs*100) / 100
	}
	l.tl.Offered = append(l.tl.Offered, rate(begun))
	l.tl.Answered = append(l.tl.Answered, rate(answered))
	l.tl.Errors = append(l.tl.Errors, errs)
	l.tl.Dropped = append(l.tl.Dropped, dropped)
	l.tl.InFlight = append(l.tl.InFlight, inFlight)
}

// snapshot returns the timeline so far, the open phase ending at now, with
// the sampled series.
func (l *timelineLog) snapshot(now time.Time, points []timedMeasurement) *Timeline {
	tl := l.tl
	tl.Phases = slices.Clone(l.phases)
	if n := len(tl.Phases); n > 0 && tl.Phases[n-1].To < 0 {
		tl.Phases[n-1].To = l.since(now)
	}
	tl.Kinds = nil
	for _, ks := range l.tl.Kinds {
		c := *ks
		c.Observed = !l.requested[ks.Kind]
		tl.Kinds = append(tl.Kinds, &c)
	}
	index := map[[2]string]int{}
	for _, p := range points {
		key := [2]string{p.m.Component, p.m.Metric}
		i, ok := index[key]
		if !ok {
			i = len(tl.Resources)
			index[key] = i
			tl.Resources = append(tl.Resources, ResourceSeries{Component: p.m.Component, Metric: p.m.Metric, Unit: p.m.Unit, Harness: p.m.Harness})
		}
		r := &tl.Resources[i]
		r.T = append(r.T, l.since(p.at))
		r.V = append(r.V, p.m.Value)
		if p.m.Limit > 0 {
			r.Limit = p.m.Limit
		}
	}
	sort.SliceStable(tl.Resources, func(a, b int) bool {
		ra, rb := tl.Resources[a], tl.Resources[b]
		if ra.Component != rb.Component {
			return ra.Component < rb.Component
		}
		return ra.Metric < rb.Metric
	})
	return &tl
}
