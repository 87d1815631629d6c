package loadtest

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("loadtest.update", false, "rewrite the baselines in testdata/golden from this run")

// Baseline is the committed record of a run's stable facts, with the
// tolerances a later run is compared with: testdata/golden/<Test>/<sub>.json.
type Baseline struct {
	// Schema is SchemaVersion at the time of writing.
	Schema int `json:"schema"`
	// Scenario is the run's name.
	Scenario string `json:"scenario"`
	// Commit is the code the baseline was measured on; Updated when.
	Commit  string    `json:"commit,omitempty"`
	Updated time.Time `json:"updated"`
	// Environment is where it was measured; only runs of the same class
	// are compared with it.
	Environment Environment `json:"environment"`
	// Plan is the run's plan: runs of another plan are not compared.
	Plan PlanInfo `json:"plan"`
	// Capacity is the run's capacity.
	Capacity float64 `json:"capacity"`
	// Tolerances say how far a later run may move before it regresses.
	Tolerances Tolerances `json:"tolerances"`
	// Steps holds per-level figures.
	Steps []BaselineStep `json:"steps"`
}

// Tolerances bound how much a run may differ from its baseline. Zero fields
// take the defaults.
type Tolerances struct {
	// Capacity is the largest relative drop allowed; default 0.10.
	Capacity float64 `json:"capacity"`
	// Latency is the largest relative rise of a kind's p95 or p99;
	// default 0.25.
	Latency float64 `json:"latency"`
	// LatencySlack is an absolute rise always allowed, so that
	// millisecond latencies do not flap with the scheduling noise of a
	// shared machine; default 5 ms.
	LatencySlack time.Duration `json:"latency_slack"`
	// ErrorRate is the largest absolute rise of an outcome's rate
	// (0.01 is one percentage point); default 0.01.
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

// BaselineKind is one kind's latency bounds and outcome rates at a level.
type BaselineKind struct {
	Kind string `json:"kind"`
	// Count is the number of requests (samples) the figures come from.
	Count int64 `json:"count"`
	// P95 and P99 are the measured percentiles; P95High and P99High the
	// upper ends of their confidence intervals (see PercentileBounds).
	P95     time.Duration       `json:"p95"`
	P95High time.Duration       `json:"p95_high"`
	P99     time.Duration       `json:"p99"`
	P99High time.Duration       `json:"p99_high"`
	Rates   map[Outcome]float64 `json:"rates"`
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

// NewBaseline returns the baseline of res, keeping the given tolerances.
// Only passed or failed steps count; invalid or incomplete ones say
// nothing about the target.
func NewBaseline(res *Result, tol Tolerances) *Baseline {
	b := &Baseline{
		Schema: SchemaVersion, Scenario: res.Scenario, Commit: res.Provenance.Commit,
		Updated: res.End.UTC(), Environment: res.Environment, Plan: res.Plan, Capacity: res.Capacity,
		Tolerances: tol.withDefaults(),
	}
	for _, s := range res.Steps {
		if s.Verdict != Pass && s.Verdict != Fail {
			continue
		}
		bs := BaselineStep{Level: s.Step.Level}
		for _, k := range s.Kinds {
			if k.Total() == 0 {
				continue
			}
			bk := BaselineKind{Kind: k.Kind, Count: k.Total(), P95: k.Latency.P95, P99: k.Latency.P99, Rates: map[Outcome]float64{}}
			_, bk.P95High = k.PercentileBounds(95, confidenceZ)
			_, bk.P99High = k.PercentileBounds(99, confidenceZ)
			for o := range k.Outcomes {
				if o != OK {
					bk.Rates[o] = k.Rate(o)
				}
			}
			bs.Kinds = append(bs.Kinds, bk)
		}
		b.Steps = append(b.Steps, bs)
	}
	return b
}

// Comparison is the outcome of comparing a run with its baseline.
type Comparison struct {
	// Path is the baseline file.
	Path string `json:"path"`
	// Missing is set when there is no baseline yet.
	Missing bool `json:"missing,omitempty"`
	// Skipped says why no comparison was made (another environment
	// class, an incomplete run); empty when it was made.
	Skipped string `json:"skipped,omitempty"`
	// Regressions lists every figure that moved beyond its tolerance,
	// with the baseline's value and the run's.
	Regressions []string `json:"regressions,omitempty"`
	// Compared counts the figures compared.
	Compared int `json:"compared"`
}

// Compare compares res with b at the levels both measured. A figure
// regresses only when its change is both large and real: a percentile when
// it rose beyond the tolerance and the low end of its confidence interval
// is above the high end of the baseline's (a p95 over a few hundred samples
// of a long-tailed latency moves by tens of percent by chance alone); an
// outcome rate when its rise is beyond the tolerance and beyond chance
// (three standard errors).
func (b *Baseline) Compare(res *Result) *Comparison {
	c := &Comparison{}
	if diff := b.Environment.ClassDiff(res.Environment); len(diff) > 0 {
		c.Skipped = "environment class differs: " + strings.Join(diff, "; ")
		return c
	}
	if b.Plan.Kind != "" && !reflect.DeepEqual(b.Plan, res.Plan) {
		c.Skipped = "the plan differs from the baseline's; record a baseline for this plan with -loadtest.update"
		return c
	}
	if res.Partial {
		c.Skipped = "the run is incomplete"
		return c
	}
	tol := b.Tolerances.withDefaults()
	c.Compared++
	if b.Capacity > 0 && res.Capacity < b.Capacity*(1-tol.Capacity) {
		c.Regressions = append(c.Regressions, fmt.Sprintf("capacity dropped from %g to %g (-%.0f%%, tolerance %.0f%%)",
			b.Capacity, res.Capacity, (1-res.Capacity/b.Capacity)*100, tol.Capacity*100))
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
			for _, q := range []struct {
				name                string
				p                   float64
				base, baseHigh, now time.Duration
			}{{"p95", 95, bk.P95, bk.P95High, k.Latency.P95}, {"p99", 99, bk.P99, bk.P99High, k.Latency.P99}} {
				c.Compared++
				// A regression must be both large (beyond the tolerance) and
				// real (the confidence intervals do not overlap).
				nowLow, _ := k.PercentileBounds(q.p, confidenceZ)
				limit := time.Duration(float64(q.base)*(1+tol.Latency)) + tol.LatencySlack
				if q.now > limit && nowLow > q.baseHigh {
					c.Regressions = append(c.Regressions, fmt.Sprintf("level %g: %s %s rose from %v to %v (+%.0f%%, tolerance %.0f%% + %v)",
						bs.Level, bk.Kind, q.name, q.base, q.now, (float64(q.now)/float64(q.base)-1)*100, tol.Latency*100, tol.LatencySlack))
				}
			}
			for o := Outcome(1); int(o) < NumOutcomes; o++ {
				c.Compared++
				base, now := bk.Rates[o], k.Rate(o)
				if now-base > tol.ErrorRate && significant(base, bk.Count, now, k.Total()) {
					c.Regressions = append(c.Regressions, fmt.Sprintf("level %g: %s %s rate rose from %s to %s (tolerance +%s)",
						bs.Level, bk.Kind, o, formatPct(base), formatPct(now), formatPct(tol.ErrorRate)))
				}
			}
		}
	}
	return c
}

// ReadBaseline reads a baseline file; the error wraps fs.ErrNotExist when
// there is none.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
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
	return writeAtomic(path, append(data, '\n'))
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

// Paths returns where the result and the baseline of the test named name
// ("TestLoad_Smoke/users=50") live: testdata/results/<Test>/<sub>.json and
// testdata/golden/<Test>/<sub>.json under the module root, or under
// LOADTEST_RESULTS_DIR and LOADTEST_GOLDEN_DIR when set. A test without
// subtests uses "run" as its file name. A -short run is another experiment
// than a full one: its files end in ".short.json".
func Paths(name string) (result, golden string, err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", "", fmt.Errorf("loadtest: no go.mod above the working directory to anchor testdata/: %w", err)
	}
	resDir := envOr("LOADTEST_RESULTS_DIR", filepath.Join(root, "testdata", "results"))
	goldDir := envOr("LOADTEST_GOLDEN_DIR", filepath.Join(root, "testdata", "golden"))
	test, sub, ok := strings.Cut(name, "/")
	if !ok {
		sub = "run"
	}
	rel := filepath.Join(safeName(test), safeName(sub))
	if testing.Testing() && testing.Short() {
		rel += ".short"
	}
	rel += ".json"
	return filepath.Join(resDir, rel), filepath.Join(goldDir, rel), nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// safeName keeps subtest levels as directories and replaces characters
// that do not belong in file names.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\\', ':', '*', '?', '"', '<', '>', '|', ' ':
			return '_'
		}
		return r
	}, s)
}
