package ab

import (
	"fmt"
	"slices"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Figure is one number a trial yields, compared between the arms.
type Figure struct {
	// Name identifies the figure: "throughput", "failures",
	// "failures dashboard", "p95 tools/call", "cpu/ok relay".
	Name string `json:"name"`
	// Unit is the unit of its values: "req/s", "%", "ms", "µs", "MiB".
	Unit string `json:"unit"`
	// Direction says which way is better.
	Direction Direction `json:"direction"`
	// Rule judges its two samples.
	Rule Rule `json:"rule"`
	// Primary figures decide the verdict, corrected together for their
	// number (Holm); the others are reported.
	Primary bool `json:"primary"`
	// Harness marks a cost of the harness, not of the system under test:
	// the CPU or memory of a component other than the target and its
	// database (the generator, the proxy, the mock upstream). It moves
	// with the machine more than with the build, so a history reports
	// its changes but never bisects them.
	Harness bool `json:"harness,omitempty"`
	// Unjudged says why the figure is not judged — too few samples in a
	// trial to estimate it — and is empty for a judged figure.
	Unjudged string `json:"unjudged,omitempty"`

	// need is the fewest samples every trial must hold for the figure to
	// be judged (0: no such rule), and what counts them ("samples",
	// "requests").
	need     int64
	needWhat string
}

// Trial figures are pooled over a result's valid steps (passed or failed):
//
//   - throughput: successful requests per second of hold;
//   - failures: the share of requests that did not succeed, in percent;
//   - failures <kind>: the same for each request kind, when there are
//     several;
//   - p50/p95/p99 <kind>: the kind's latency over the merged histograms of
//     the steps, in ms, for every kind, observed ones (fan-out delays,
//     stream events) included;
//   - cpu/ok <component>: the component's CPU time per successful request,
//     in µs, from its sampled cores × hold seconds (replicas summed);
//   - memory <component>: the most memory it held, in MiB;
//   - queries/ok and db time/ok: the statements the database ran per
//     successful request, and their execution time in ms, when the run
//     counted them (a loadtest.StatementSource: fixtures' PostgreSQL) —
//     an N+1 planted in a request reads here as ×N.
//
// A percentile is judged only when every trial holds at least minTail
// samples above it — 10 samples for p50, 100 for p95, 500 for p99 — and
// a kind's failure rate only when every trial holds minRequests requests
// of it; below that the figure is listed as unjudged rather than left
// out. The test compares trials, so it is valid at any count (with no
// change, each trial's figure is as likely in either arm); the floor
// keeps a percentile off a trial's few largest samples, whose level grows
// with how many there are — there a change in how often a kind is asked
// would read as a change in its latency. (A floor of 10 samples above,
// 20 for p50, left the -short smoke's dashboard, 14 to 23 calls a trial
// with stationary users, unjudged, and a planted 5 ms wait doubling its
// median passed as unchanged.)
//
// Primary, by default: every judged figure but the cost of the harness
// (components other than the target and its database: the proxy, the mock
// upstream) and memory. Those are reported: they move with the machine
// more than with the build. Config.Primary names the primary figures
// instead.
const (
	minTail     = 5
	minRequests = 20
)

// percentiles are the latency percentiles of each kind.
var percentiles = []int{50, 95, 99}

// figureValues is one trial's figures, their values and how many samples
// each rests on (latency and per-kind failure figures only).
type figureValues struct {
	figures []Figure
	values  map[string]float64
	samples map[string]int64
}

func (f *figureValues) add(fig Figure, v float64) {
	f.figures = append(f.figures, fig)
	f.values[fig.Name] = v
}

// Measure is one figure's value in one result.
type Measure struct {
	Figure
	Value float64 `json:"value"`
}

// Measures returns the figures of one result — the ones an A/B trial
// yields (throughput, failures, percentiles per kind, CPU per success and
// memory per component), pooled over its valid steps — leaving out a
// figure its result holds too few samples to estimate (see the floors
// above); nil when the result has no valid step. A history keeps them per
// run so that a change in any of them can be found over the nights.
func Measures(res *loadtest.Result) []Measure {
	fv, ok := figuresOf(res)
	if !ok {
		return nil
	}
	var out []Measure
	for _, f := range fv.figures {
		if n, counted := fv.samples[f.Name]; counted && f.need > 0 && n < f.need {
			continue
		}
		out = append(out, Measure{Figure: f, Value: fv.values[f.Name]})
	}
	return out
}

// kindTally is one kind's requests and latency over a result's valid steps.
type kindTally struct {
	name      string
	observed  bool
	ok, total int64
	hist      *hdrhistogram.Histogram
}

// figuresOf computes the figures of one trial's result; ok is false when
// the result has no valid step.
func figuresOf(res *loadtest.Result) (fv figureValues, ok bool) {
	fv.values, fv.samples = map[string]float64{}, map[string]int64{}
	var steps []*loadtest.StepResult
	for _, s := range res.Steps {
		if (s.Verdict == result.Pass || s.Verdict == result.Fail) && !s.Idle() {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		return fv, false
	}
	var secs float64
	for _, s := range steps {
		secs += s.Seconds()
	}
	kinds := tallyKinds(steps)
	var okN, total int64
	requested := 0
	for _, k := range kinds {
		if !k.observed {
			okN += k.ok
			total += k.total
			requested++
		}
	}
	if secs > 0 {
		fv.add(Figure{Name: "throughput", Unit: "req/s", Direction: HigherIsBetter, Primary: true}, float64(okN)/secs)
	}
	if total > 0 {
		fv.add(Figure{Name: "failures", Unit: "%", Direction: LowerIsBetter, Primary: true, Rule: Rule{Absolute: 0.5}},
			float64(total-okN)/float64(total)*100)
	}
	for _, k := range kinds {
		// With one kind its failure rate is the overall one: a second,
		// identical figure would only widen the correction.
		if !k.observed && requested > 1 && k.total > 0 {
			name := "failures " + k.name
			fv.add(Figure{Name: name, Unit: "%", Direction: LowerIsBetter, Primary: true, Rule: Rule{Absolute: 1},
				need: minRequests, needWhat: "requests"}, float64(k.total-k.ok)/float64(k.total)*100)
			fv.samples[name] = k.total
		}
		if k.hist == nil || k.hist.TotalCount() == 0 {
			continue
		}
		for _, p := range percentiles {
			name := fmt.Sprintf("p%d %s", p, k.name)
			fv.add(Figure{Name: name, Unit: "ms", Direction: LowerIsBetter, Primary: true, Rule: Rule{Relative: 0.10, Absolute: 1},
				need: int64(minTail * 100 / (100 - p)), needWhat: "samples"}, float64(k.hist.ValueAtPercentile(float64(p)))/1000)
			fv.samples[name] = k.hist.TotalCount()
		}
	}
	if okN > 0 {
		for _, c := range componentCosts(res, steps) {
			fv.add(Figure{Name: "cpu/ok " + c.name, Unit: "µs", Direction: LowerIsBetter, Primary: c.primary, Harness: !c.primary},
				c.cpuSeconds/float64(okN)*1e6)
		}
	}
	if calls, ms, ok := statementsOf(steps); ok > 0 {
		fv.add(Figure{Name: "queries/ok", Unit: "count", Direction: LowerIsBetter, Primary: true, Rule: Rule{Relative: 0.10, Absolute: 0.5}},
			float64(calls)/float64(ok))
		fv.add(Figure{Name: "db time/ok", Unit: "ms", Direction: LowerIsBetter, Primary: true, Rule: Rule{Relative: 0.10, Absolute: 0.05}},
			ms/float64(ok))
	}
	for _, c := range componentMemory(steps) {
		_, role := componentOf(res, c.name)
		fv.add(Figure{Name: "memory " + c.name, Unit: "MiB", Direction: LowerIsBetter, Rule: Rule{Relative: 0.10, Absolute: 1},
			Harness: role != result.RoleTarget && role != result.RoleDatabase}, c.max/(1<<20))
	}
	return fv, true
}

// statementsOf sums the statements the database ran (StepResult.Queries)
// and their execution time over the steps that counted them, with those
// steps' successful requests; ok is 0 when no step counted.
func statementsOf(steps []*loadtest.StepResult) (calls int64, ms float64, ok int64) {
	for _, s := range steps {
		if s.Queries == nil || s.Queries.OK <= 0 {
			continue
		}
		calls += s.Queries.Calls
		ms += s.Queries.TotalMS
		ok += s.Queries.OK
	}
	return calls, ms, ok
}

// tallyKinds sums each kind's outcomes and merges its histograms over the
// steps, in the order the kinds first appear.
func tallyKinds(steps []*loadtest.StepResult) []*kindTally {
	var kinds []*kindTally
	index := map[string]*kindTally{}
	for _, s := range steps {
		for _, k := range s.Kinds {
			t := index[k.Kind]
			if t == nil {
				t = &kindTally{name: k.Kind, observed: k.Observed}
				index[k.Kind] = t
				kinds = append(kinds, t)
			}
			t.ok += k.Outcomes[loadtest.OK]
			t.total += k.Total()
			h := decode(k)
			switch {
			case h == nil:
			case t.hist == nil:
				t.hist = h
			default:
				t.hist.Merge(h)
			}
		}
	}
	return kinds
}

// decode returns a copy of a kind's latency histogram (µs), or nil.
func decode(k *result.KindResult) *hdrhistogram.Histogram {
	if k.Histogram == "" {
		return nil
	}
	h, err := hdrhistogram.Decode([]byte(k.Histogram))
	if err != nil {
		return nil
	}
	return h
}

// cost is a component's CPU time over the valid steps' holds.
type cost struct {
	name       string
	cpuSeconds float64
	primary    bool
}

// componentCosts sums each component's CPU (replicas "relay-2" into
// "relay"); the target and the database are primary.
func componentCosts(res *loadtest.Result, steps []*loadtest.StepResult) []cost {
	var out []cost
	index := map[string]int{}
	for _, s := range steps {
		for _, r := range s.Resources {
			if r.Metric != "cpu" || r.Unit != "cores" {
				continue
			}
			name, kind := componentOf(res, r.Component)
			i, seen := index[name]
			if !seen {
				i = len(out)
				index[name] = i
				out = append(out, cost{name: name, primary: kind == result.RoleTarget || kind == result.RoleDatabase})
			}
			out[i].cpuSeconds += r.Mean * s.Seconds()
		}
	}
	return out
}

// componentOf returns the component a series belongs to (a replica's
// series to its target) and the component's kind.
func componentOf(res *loadtest.Result, series string) (name, kind string) {
	for _, c := range res.Environment.System.Components {
		if series == c.Name || (c.Replicas > 1 && strings.HasPrefix(series, c.Name+"-")) {
			return c.Name, c.Role
		}
	}
	return series, ""
}

type peak struct {
	name string
	max  float64
}

// componentMemory returns the largest memory of each component other than
// the generator over the steps.
func componentMemory(steps []*loadtest.StepResult) []peak {
	var out []peak
	for _, s := range steps {
		for _, r := range s.Resources {
			if r.Metric != "memory" || r.Unit != "bytes" || r.Component == "generator" {
				continue
			}
			i := slices.IndexFunc(out, func(p peak) bool { return p.name == r.Component })
			if i < 0 {
				out = append(out, peak{name: r.Component})
				i = len(out) - 1
			}
			out[i].max = max(out[i].max, r.Max)
		}
	}
	return out
}
