package loadtest

import (
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// timelineLog builds a run's Timeline window by window.
type timelineLog struct {
	tl        result.Timeline
	kinds     map[string]*result.KindSeries
	requested map[string]bool // kinds whose samples were requests
	phases    []result.Phase  // open phase last, To unset
}

func newTimelineLog(start time.Time, every time.Duration) *timelineLog {
	return &timelineLog{tl: result.Timeline{Every: every, Start: start}, kinds: map[string]*result.KindSeries{}, requested: map[string]bool{}}
}

func (l *timelineLog) since(t time.Time) float64 {
	return math.Round(t.Sub(l.tl.Start).Seconds()*1000) / 1000
}

// phase closes the open phase at now and opens the next one.
func (l *timelineLog) phase(now time.Time, step int, name string, level float64) {
	l.closePhase(now)
	l.phases = append(l.phases, result.Phase{Step: step, Name: name, Level: level, From: l.since(now), To: -1})
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
	counts   [][result.NumOutcomes]int64
	begun    []int64
	requests []bool
}

// add appends one window ending at end, of secs seconds.
func (l *timelineLog) add(end time.Time, secs float64, w liveWindow, inFlight int64) {
	n := len(l.tl.T)
	l.tl.T = append(l.tl.T, l.since(end))
	var begun, answered, errs, dropped, timeouts int64
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
			ks = &result.KindSeries{Kind: name, Count: make([]int64, n), Errors: make([]int64, n),
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
			timeouts += c[Timeout]
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
	l.tl.Timeouts = append(l.tl.Timeouts, timeouts)
	l.tl.InFlight = append(l.tl.InFlight, inFlight)
}

// snapshot returns the timeline so far, the open phase ending at now, with
// the sampled series.
func (l *timelineLog) snapshot(now time.Time, points []timedMeasurement) *result.Timeline {
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
			tl.Resources = append(tl.Resources, result.ResourceSeries{Component: p.m.Component, Metric: p.m.Metric, Unit: p.m.Unit, Harness: p.m.Harness})
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
