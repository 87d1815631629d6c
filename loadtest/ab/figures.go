package ab

import (
	"fmt"
	"slices"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/headroom-dev/headroom/loadtest"
)

// Figure is one number a trial yields, compared between the arms.
type Figure struct {
	// Name identifies the figure: "throughput", "failures",
	// "p95 tools/call", "cpu/ok relay".
	Name string `json:"name"`
	// Unit is the unit of its values: "req/s", "%", "ms", "µs", "MiB".
	Unit string `json:"unit"`
	// Direction says which way is better.
	Direction Direction `json:"direction"`
	// Rule judges its two samples.
	Rule Rule `json:"rule"`
	// Primary figures decide the verdict; the others are reported.
	Primary bool `json:"primary"`
}

// Trial figures are pooled over a result's valid steps (passed or failed):
//
//   - throughput: successful requests per second of hold;
//   - failures: the share of requests that did not succeed, in percent;
//   - p50/p95/p99 <kind>: the kind's latency over the merged histograms of
//     the steps, in ms, for kinds with at least minSamples answers;
//   - cpu/ok <component>: the component's CPU time per successful request,
//     in µs, from its sampled cores × hold seconds (replicas summed);
//   - memory <component>: the most memory it held, in MiB.
//
// Primary, by default: throughput, failures, the p95 of the busiest request
// kind, and the CPU per success of the target and of its database — the
// cost figures, far less noisy than latency on a shared machine. The
// others are reported, not judged into the verdict, so that a dozen
// secondary figures do not multiply the chance of a false alarm.
const minSamples = 20

// figureValues is one trial's figures.
type figureValues struct {
	figures []Figure
	values  map[string]float64
}

func (f *figureValues) add(fig Figure, v float64) {
	f.figures = append(f.figures, fig)
	f.values[fig.Name] = v
}

// figuresOf computes the figures of one trial's result; ok is false when
// the result has no valid step.
func figuresOf(res *loadtest.Result) (fv figureValues, ok bool) {
	fv.values = map[string]float64{}
	var steps []*loadtest.StepResult
	for _, s := range res.Steps {
		if s.Verdict == loadtest.Pass || s.Verdict == loadtest.Fail {
			steps = append(steps, s)
		}
	}
	if len(steps) == 0 {
		return fv, false
	}
	var secs float64
	var okN, total int64
	busiest, busiestN := "", int64(-1)
	reqTotals := map[string]int64{}
	hists := map[string]*hdrhistogram.Histogram{}
	var kinds []string
	for _, s := range steps {
		secs += s.Seconds()
		for _, k := range s.Kinds {
			if !k.Observed {
				okN += k.Outcomes[loadtest.OK]
				total += k.Total()
				reqTotals[k.Kind] += k.Total()
			}
			h := decode(k)
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			if hists[k.Kind] == nil {
				hists[k.Kind] = h
				kinds = append(kinds, k.Kind)
			} else {
				hists[k.Kind].Merge(h)
			}
		}
	}
	for k, n := range reqTotals {
		if n > busiestN || (n == busiestN && k < busiest) {
			busiest, busiestN = k, n
		}
	}
	if secs > 0 {
		fv.add(Figure{Name: "throughput", Unit: "req/s", Direction: HigherIsBetter, Primary: true}, float64(okN)/secs)
	}
	if total > 0 {
		fv.add(Figure{Name: "failures", Unit: "%", Direction: LowerIsBetter, Primary: true, Rule: Rule{Absolute: 0.5}},
			float64(total-okN)/float64(total)*100)
	}
	for _, kind := range kinds {
		h := hists[kind]
		if h.TotalCount() < minSamples {
			continue
		}
		for _, p := range []float64{50, 95, 99} {
			fv.add(Figure{Name: fmt.Sprintf("p%g %s", p, kind), Unit: "ms", Direction: LowerIsBetter,
				Primary: p == 95 && kind == busiest, Rule: Rule{Relative: 0.10, Absolute: 1}},
				float64(h.ValueAtPercentile(p))/1000)
		}
	}
	if okN > 0 {
		for _, c := range componentCosts(res, steps) {
			fv.add(Figure{Name: "cpu/ok " + c.name, Unit: "µs", Direction: LowerIsBetter, Primary: c.primary},
				c.cpuSeconds/float64(okN)*1e6)
		}
	}
	for _, c := range componentMemory(steps) {
		fv.add(Figure{Name: "memory " + c.name, Unit: "MiB", Direction: LowerIsBetter, Rule: Rule{Relative: 0.10, Absolute: 1}}, c.max/(1<<20))
	}
	return fv, true
}

// decode returns a copy of a kind's latency histogram (µs), or nil.
func decode(k *loadtest.KindResult) *hdrhistogram.Histogram {
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
				out = append(out, cost{name: name, primary: kind == loadtest.KindTarget || kind == loadtest.KindDatabase})
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
			return c.Name, c.Kind
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
