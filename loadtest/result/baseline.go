package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/internal/format"
)

// Baseline is the committed record of a scenario's stable facts, with the
// tolerances a later run is compared with: testdata/baselines/<Test>/<sub>.json.
// It is written from one or more runs (LOADTEST_BASELINE_RUNS with
// -loadtest.update, or `headroom baseline` over several results) and keeps
// the spread the runs showed: a later run is flagged only when it falls
// outside that spread by more than the tolerance, and beyond chance.
//
// What compares where: correctness (the rate of every failing outcome)
// against any run of the same plan; capacity only within the same
// environment class (CPU model, cores, backend, the target's limits);
// latency only on the host that recorded the baseline, and never for a
// -short baseline, whose steps are too short for latency to be stable.
// What was not compared is said in the [Comparison].
type Baseline struct {
	// Schema is SchemaVersion at the time of writing.
	Schema int `json:"schema"`
	// Scenario is the run's name.
	Scenario string `json:"scenario"`
	// Commit is the code the baseline was measured on; Updated when.
	Commit  string    `json:"commit,omitempty"`
	Updated time.Time `json:"updated"`
	// Runs is how many runs the baseline was measured from.
	Runs int `json:"runs"`
	// Short marks the baseline of a -short run: correctness only.
	Short bool `json:"short,omitempty"`
	// Environment is where it was measured (its Host decides where
	// latency compares, its Class where capacity does).
	Environment Environment `json:"environment"`
	// Plan is the runs' plan: runs of another plan are not compared.
	Plan PlanInfo `json:"plan"`
	// Capacity is the lowest and highest capacity of the runs.
	Capacity Range `json:"capacity"`
	// Tolerances say how far a later run may move beyond the spread
	// before it regresses.
	Tolerances Tolerances `json:"tolerances"`
	// Steps holds per-level figures, each from the runs that passed that
	// level: a level a run failed is no figure to hold.
	Steps []BaselineStep `json:"steps"`
	// LeftOut names the steps whose figures were left out, and why:
	// "run 2, level 1500: fail".
	LeftOut []string `json:"left_out,omitempty"`
}

// Range is the lowest and highest value seen across a baseline's runs.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

func (r *Range) add(v float64, first bool) {
	if first {
		r.Min, r.Max = v, v
		return
	}
	r.Min, r.Max = min(r.Min, v), max(r.Max, v)
}

// Tolerances bound how far a run may move beyond its baseline's spread.
// Zero fields take the defaults.
type Tolerances struct {
	// Capacity is the largest relative drop below the lowest capacity
	// seen; default 0.10.
	Capacity float64 `json:"capacity"`
	// Latency is the largest relative rise of a kind's p95 or p99 above
	// the highest seen; default 0.25.
	Latency float64 `json:"latency"`
	// LatencySlack is an absolute rise always allowed, so that millisecond
	// latencies do not flap with the scheduling noise of a shared machine;
	// default 5 ms.
	LatencySlack time.Duration `json:"latency_slack"`
	// ErrorRate is the largest absolute rise of an outcome's rate above
	// the highest seen (0.01 is one percentage point); default 0.01.
	ErrorRate float64 `json:"error_rate"`
}

func (t Tolerances) withDefaults() Tolerances {
	if t.Capacity == 0 {
		t.Capacity = 0.10
	}
	if t.Latency == 0 {
		t.Latency = 0.25
	}
	if t.LatencySlack == 0 {
		t.LatencySlack = 5 * time.Millisecond
	}
	if t.ErrorRate == 0 {
		t.ErrorRate = 0.01
	}
	return t
}

// BaselineStep is one level's stable facts.
type BaselineStep struct {
	Level float64        `json:"level"`
	Kinds []BaselineKind `json:"kinds"`
}

// BaselineKind is one kind's latency and outcome rates at a level, as the
// spread across the runs.
type BaselineKind struct {
	Kind string `json:"kind"`
	// Count is the fewest requests (samples) of a run the figures come from.
	Count int64 `json:"count"`
	// P95 and P99 are the percentiles' spread; left out of -short
	// baselines.
	P95 *LatencyRange `json:"p95,omitempty"`
	P99 *LatencyRange `json:"p99,omitempty"`
	// Rates is the spread of each failing outcome's rate (OK left out).
	Rates map[Outcome]Range `json:"rates"`
}

// LatencyRange is a percentile's spread across runs, with the highest upper
// end of its confidence intervals (see PercentileBounds), so that a later
// run is flagged only when its own interval lies above it.
type LatencyRange struct {
	Min  time.Duration `json:"min"`
	Max  time.Duration `json:"max"`
	High time.Duration `json:"high"`
}

// confidenceZ is the width of the confidence intervals baselines use, in
// standard errors: about one false alarm in a thousand per figure.
const confidenceZ = 3

// significant reports whether a rise of an outcome's rate from p1 (over n1
// requests) to p2 (over n2) is beyond three standard errors of chance.
func significant(p1 float64, n1 int64, p2 float64, n2 int64) bool {
	if n1 == 0 || n2 == 0 {
		return false
	}
	p := (p1*float64(n1) + p2*float64(n2)) / float64(n1+n2)
	se := math.Sqrt(p * (1 - p) * (1/float64(n1) + 1/float64(n2)))
	return p2-p1 > 3*se
}

// NewBaseline returns the baseline of one or more runs of one scenario and
// plan, keeping the given tolerances: the spread of every figure across the
// runs. Only passed or failed steps count; invalid or incomplete ones say
// nothing about the target. It fails when the runs are of different
// scenarios, plans or environment classes, or when one is partial.
func NewBaseline(tol Tolerances, runs ...*Result) (*Baseline, error) {
	if len(runs) == 0 {
		return nil, errors.New("baseline: no run given")
	}
	first := runs[0]
	b := &Baseline{
		Schema: SchemaVersion, Scenario: first.Scenario, Commit: first.Provenance.Commit,
		Updated: first.End.UTC(), Runs: len(runs), Short: first.Short, Environment: first.Environment,
		Plan: first.Plan, Tolerances: tol.withDefaults(),
	}
	type key struct {
		level float64
		kind  string
	}
	per := map[key][]*KindResult{}
	var order []key
	for i, res := range runs {
		switch {
		case res.Scenario != first.Scenario:
			return nil, fmt.Errorf("baseline: run %d is of scenario %q, run 1 of %q", i+1, res.Scenario, first.Scenario)
		case !reflect.DeepEqual(res.Plan, first.Plan):
			return nil, fmt.Errorf("baseline: run %d has another plan than run 1", i+1)
		case len(res.Environment.ClassDiff(first.Environment)) > 0:
			return nil, fmt.Errorf("baseline: run %d is of another environment class (%s)", i+1, strings.Join(res.Environment.ClassDiff(first.Environment), "; "))
		case res.Short != first.Short:
			return nil, fmt.Errorf("baseline: run %d and run 1 are not both -short or both full size", i+1)
		case res.Partial:
			return nil, fmt.Errorf("baseline: run %d is incomplete; a baseline needs complete runs", i+1)
		}
		b.Capacity.add(res.Capacity, i == 0)
		if res.End.After(b.Updated) {
			b.Updated = res.End.UTC()
		}
		for _, s := range res.Steps {
			if s.Verdict != Pass {
				b.LeftOut = append(b.LeftOut, fmt.Sprintf("run %d, level %g: %s", i+1, s.Step.Level, s.Verdict))
				continue
			}
			for _, k := range s.Kinds {
				if k.Total() == 0 {
					continue
				}
				kk := key{s.Step.Level, k.Kind}
				if per[kk] == nil {
					order = append(order, kk)
				}
				per[kk] = append(per[kk], k)
			}
		}
	}
	for _, kk := range order {
		bs := b.step(kk.level)
		bs.Kinds = append(bs.Kinds, newBaselineKind(kk.kind, per[kk], b.Short))
	}
	return b, nil
}

// step returns the baseline step of level, adding it when new.
func (b *Baseline) step(level float64) *BaselineStep {
	for i := range b.Steps {
		if b.Steps[i].Level == level {
			return &b.Steps[i]
		}
	}
	b.Steps = append(b.Steps, BaselineStep{Level: level})
	return &b.Steps[len(b.Steps)-1]
}

// newBaselineKind returns the spread of one kind's figures at one level
// over the runs' results ks.
func newBaselineKind(kind string, ks []*KindResult, short bool) BaselineKind {
	bk := BaselineKind{Kind: kind, Count: ks[0].Total(), Rates: map[Outcome]Range{}}
	for i, k := range ks {
		bk.Count = min(bk.Count, k.Total())
		for o := Outcome(1); int(o) < NumOutcomes; o++ {
			r := bk.Rates[o]
			r.add(k.Rate(o), i == 0)
			bk.Rates[o] = r
		}
		if short || k.Answered() == 0 {
			continue
		}
		for _, q := range []struct {
			r **LatencyRange
			p float64
			v time.Duration
		}{{&bk.P95, 95, k.Latency.P95}, {&bk.P99, 99, k.Latency.P99}} {
			_, high := k.PercentileBounds(q.p, confidenceZ)
			if lr := *q.r; lr != nil {
				lr.Min, lr.Max, lr.High = min(lr.Min, q.v), max(lr.Max, q.v), max(lr.High, high)
			} else {
				*q.r = &LatencyRange{Min: q.v, Max: q.v, High: high}
			}
		}
	}
	for o, r := range bk.Rates {
		if r.Max == 0 {
			delete(bk.Rates, o)
		}
	}
	return bk
}

// Comparison is the outcome of comparing a run with its baseline.
type Comparison struct {
	// Path is the baseline file.
	Path string `json:"path"`
	// Missing is set when there is no baseline yet.
	Missing bool `json:"missing,omitempty"`
	// Skipped says why no comparison was made at all (another plan, an
	// incomplete run); empty when it was made.
	Skipped string `json:"skipped,omitempty"`
	// NotCompared says which figures were left out and why (latency on
	// another host, capacity in another environment class).
	NotCompared []string `json:"not_compared,omitempty"`
	// Regressions lists every figure that moved beyond its tolerance,
	// with the baseline's value and the run's, and every step in which a
	// component of the system under test stopped.
	Regressions []string `json:"regressions,omitempty"`
	// Inconclusive says why, with no figure regressed, the run still
	// cannot claim to have held its baseline: a step invalid or incomplete
	// (what it measured is not the target's, or not all of it), a capacity
	// below the baseline's beside such a step. A comparison with any is no
	// pass: rerun.
	Inconclusive []string `json:"inconclusive,omitempty"`
	// Compared counts the figures compared.
	Compared int `json:"compared"`
}

// Held reports whether the run held its baseline: compared, with no
// regression and nothing inconclusive.
func (c *Comparison) Held() bool {
	return !c.Missing && c.Skipped == "" && len(c.Regressions) == 0 && len(c.Inconclusive) == 0
}

// Lines are the comparison as a report gives it: a sentence saying what
// it found, then every regression, inconclusive point and figure left
// out, each a line of its own.
func (c *Comparison) Lines() []string {
	var out []string
	switch {
	case c.Missing:
		out = append(out, fmt.Sprintf("No baseline at %s yet; record one with -loadtest.update.", c.Path))
	case c.Skipped != "":
		out = append(out, fmt.Sprintf("Not compared with %s: %s.", c.Path, c.Skipped))
	case len(c.Regressions) > 0:
		out = append(out, fmt.Sprintf("Regressions against %s (%d figures compared):", c.Path, c.Compared))
	case len(c.Inconclusive) > 0:
		out = append(out, fmt.Sprintf("No verdict against %s (%d figures compared): the run cannot show it held its baseline; rerun:", c.Path, c.Compared))
	default:
		out = append(out, fmt.Sprintf("No regression against %s (%d figures compared).", c.Path, c.Compared))
	}
	for _, r := range c.Regressions {
		out = append(out, "regression: "+r)
	}
	for _, r := range c.Inconclusive {
		out = append(out, "inconclusive: "+r)
	}
	for _, n := range c.NotCompared {
		out = append(out, "not compared: "+n)
	}
	return out
}

// Compare compares res with b at the levels both measured. A figure
// regresses only when it moved beyond the baseline's spread by more than
// the tolerance and the move is beyond chance: a percentile when the low end
// of its confidence interval is also above the high end of the baseline's
// (a p95 over a few hundred samples moves by tens of percent by chance
// alone); an outcome rate when its rise is beyond three standard errors.
func (b *Baseline) Compare(res *Result) *Comparison {
	c := &Comparison{}
	if b.Plan.Type != "" && !reflect.DeepEqual(b.Plan, res.Plan) {
		c.Skipped = "the plan differs from the baseline's; record a baseline for this plan with -loadtest.update"
		return c
	}
	if res.Partial {
		c.Skipped = "the run is incomplete"
		return c
	}
	tol := b.Tolerances.withDefaults()
	classDiff := b.Environment.ClassDiff(res.Environment)
	sameClass := len(classDiff) == 0
	latency := sameClass && !b.Short && b.Environment.Host != "" && b.Environment.Host == res.Environment.Host
	if !sameClass {
		c.NotCompared = append(c.NotCompared, "capacity and latency: another environment class ("+strings.Join(classDiff, "; ")+"); correctness compared")
	}
	// A step that says nothing of the target, or not all, leaves the run
	// unable to claim it held: the target may have failed there.
	unsure := false
	for _, s := range res.Steps {
		if s.Verdict == Invalid || s.Verdict == Incomplete {
			unsure = true
			c.Inconclusive = append(c.Inconclusive, fmt.Sprintf("step %d (level %g) is %s: %s", s.Index+1, s.Step.Level, s.Verdict,
				format.FirstOr(s.InvalidReasons(), "it did not finish")))
		}
		if s.Down {
			c.Regressions = append(c.Regressions, fmt.Sprintf("level %g: the system under test went down: %s", s.Step.Level, strings.Join(s.Violations, "; ")))
		}
	}
	switch {
	case b.Short:
		c.NotCompared = append(c.NotCompared, "latency: a -short baseline records correctness only")
	case sameClass && !latency:
		c.NotCompared = append(c.NotCompared, fmt.Sprintf("latency: the baseline was recorded on host %q, this run is on %q; latency compares only on the host that recorded it", b.Environment.Host, res.Environment.Host))
	}
	if sameClass {
		c.Compared++
		if b.Capacity.Min > 0 && res.Capacity < b.Capacity.Min*(1-tol.Capacity) {
			drop := fmt.Sprintf("capacity dropped to %g, below the %g–%g the baseline's %d run(s) reached (-%.0f%%, tolerance %.0f%%)",
				res.Capacity, b.Capacity.Min, b.Capacity.Max, b.Runs, (1-res.Capacity/b.Capacity.Min)*100, tol.Capacity*100)
			if unsure {
				c.Inconclusive = append(c.Inconclusive, drop+", beside an invalid or incomplete step: the target's or the harness's, the run cannot tell")
			} else {
				c.Regressions = append(c.Regressions, drop)
			}
		}
	}
	for _, bs := range b.Steps {
		var s *StepResult
		for _, rs := range res.Steps {
			if rs.Step.Level == bs.Level && (rs.Verdict == Pass || rs.Verdict == Fail) {
				s = rs
			}
		}
		if s == nil {
			continue
		}
		for _, bk := range bs.Kinds {
			k := s.Kind(bk.Kind)
			if k == nil || k.Total() == 0 {
				continue
			}
			if latency {
				c.compareLatency(bs.Level, bk, k, tol)
			}
			for o := Outcome(1); int(o) < NumOutcomes; o++ {
				c.Compared++
				base, now := bk.Rates[o], k.Rate(o)
				if now-base.Max > tol.ErrorRate && significant(base.Max, bk.Count, now, k.Total()) {
					c.Regressions = append(c.Regressions, fmt.Sprintf("level %g: %s %s rate rose to %s, above the %s–%s of the baseline (tolerance +%s)",
						bs.Level, bk.Kind, o, format.Pct(now), format.Pct(base.Min), format.Pct(base.Max), format.Pct(tol.ErrorRate)))
				}
			}
		}
	}
	return c
}

// compareLatency flags k's p95 and p99 when they rose beyond bk's spread.
func (c *Comparison) compareLatency(level float64, bk BaselineKind, k *KindResult, tol Tolerances) {
	for _, q := range []struct {
		name string
		p    float64
		base *LatencyRange
		now  time.Duration
	}{{"p95", 95, bk.P95, k.Latency.P95}, {"p99", 99, bk.P99, k.Latency.P99}} {
		if q.base == nil {
			continue
		}
		c.Compared++
		// A regression must be both large (beyond the spread and the
		// tolerance) and real (the confidence intervals do not overlap).
		nowLow, _ := k.PercentileBounds(q.p, confidenceZ)
		limit := time.Duration(float64(q.base.Max)*(1+tol.Latency)) + tol.LatencySlack
		if q.now > limit && nowLow > q.base.High {
			c.Regressions = append(c.Regressions, fmt.Sprintf("level %g: %s %s rose to %v, above the %v–%v of the baseline (+%.0f%%, tolerance %.0f%% + %v)",
				level, bk.Kind, q.name, q.now, q.base.Min, q.base.Max, (float64(q.now)/float64(q.base.Max)-1)*100, tol.Latency*100, tol.LatencySlack))
		}
	}
}

// ReadBaseline reads a baseline file; the error wraps fs.ErrNotExist when
// there is none.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct{ Schema int }
	if err := json.Unmarshal(data, &head); err == nil && head.Schema < SchemaVersion {
		return nil, fmt.Errorf("baseline %s is of schema %d, from before baselines kept the spread of several runs; rewrite it with -loadtest.update", path, head.Schema)
	}
	var b Baseline
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("baseline %s: %w; fix the file or rewrite it with -loadtest.update", path, err)
	}
	return &b, nil
}

// WriteFile writes the baseline atomically.
func (b *Baseline) WriteFile(path string) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(path, append(data, '\n'))
}

// CompareWithBaseline reads the baseline at path and compares res with it.
// A missing baseline is reported in the comparison, not as an error.
func CompareWithBaseline(res *Result, path string) (*Comparison, error) {
	b, err := ReadBaseline(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Comparison{Path: path, Missing: true}, nil
	}
	if err != nil {
		return nil, err
	}
	c := b.Compare(res)
	c.Path = path
	return c, nil
}
