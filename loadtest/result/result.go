package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/internal/format"
)

// SchemaVersion is the version of the result file format. It changes when a
// field changes meaning or is removed; new fields do not change it.
const SchemaVersion = 2

// Result is a whole run: how it was made, where, every step measured and the
// capacity found. It is written as JSON (and Markdown) after every run, also
// a failed or interrupted one.
type Result struct {
	// Schema is SchemaVersion at the time of writing.
	Schema int `json:"schema"`
	// Scenario is the scenario's name, usually the test's full name.
	Scenario string `json:"scenario"`
	// Model is the workload model: "arrivals" (open) or "users".
	Model string `json:"model"`
	// Headline is Scenario.Headline: the kind of the report's latency
	// columns (AllRequests: every request kind together); empty means the
	// kind with the most requests.
	Headline string `json:"headline,omitempty"`
	// Plan describes the plan: its kind and parameters.
	Plan PlanInfo `json:"plan"`
	// Checks lists every check, as text.
	Checks []string `json:"checks"`
	// Params records the scenario's knobs, the workload model's included.
	Params map[string]string `json:"params,omitempty"`
	// Seed is the run's random seed.
	Seed uint64 `json:"seed"`
	// Short marks a run of a scenario's -short size (go test -short).
	Short bool `json:"short,omitempty"`
	// Start and End bound the run.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Provenance says what code and which command produced the result.
	Provenance Provenance `json:"provenance"`
	// Environment fingerprints the machine and the target's shape.
	Environment Environment `json:"environment"`
	// Steps holds every step measured, in order.
	Steps []*StepResult `json:"steps"`
	// Capacity is the highest level that passed, below every level that
	// failed; 0 when no step passed.
	Capacity float64 `json:"capacity"`
	// FirstFailure is the lowest level that failed; 0 when none did.
	FirstFailure float64 `json:"first_failure,omitempty"`
	// CapacityLowerBound is set when a level held and none failed: nothing
	// gave out, so the capacity is at least Capacity — the plan's top, or
	// where the harness stopped it — not a measured ceiling (see
	// CapacityText).
	CapacityLowerBound bool `json:"capacity_lower_bound,omitempty"`
	// Verdict is pass when every step passed (a knee search: when a level
	// held below every failing probe), fail when one failed, invalid when
	// the generator was the bottleneck, incomplete when the run was
	// interrupted.
	Verdict Verdict `json:"verdict"`
	// Partial is set when the run was interrupted; what was measured up to
	// then is kept.
	Partial bool `json:"partial"`
	// Conclusion says why the plan stopped, in a sentence.
	Conclusion string `json:"conclusion,omitempty"`
	// Findings are what Scenario.Analyze derived from the steps.
	Findings []Finding `json:"findings,omitempty"`
	// Projection is where the costs measured below the knee say the
	// components with limits run out, set against the measured knee.
	Projection *Projection `json:"projection,omitempty"`
	// Timeline is the run window by window, when kept (Scenario.SeriesEvery).
	Timeline *Timeline `json:"timeline,omitempty"`
	// Shard is the shard of a sharded run this result is (Scenario.Shard);
	// Shards lists every shard of a result merged from shards.
	Shard  *ShardInfo  `json:"shard,omitempty"`
	Shards []ShardInfo `json:"shards,omitempty"`
	// Baseline is the comparison with the committed baseline, when made.
	Baseline *Comparison `json:"baseline,omitempty"`
}

// Finding is one figure a scenario derives from its steps, such as the
// memory one held stream costs, with its 95% interval when it has one.
type Finding struct {
	// Name says what was found: "relay memory per held stream".
	Name string `json:"name"`
	// Value, with Low and High bounding its interval (equal to Value when
	// it has none), in Unit ("bytes", "count", "requests/s").
	Value float64 `json:"value"`
	Low   float64 `json:"low"`
	High  float64 `json:"high"`
	Unit  string  `json:"unit,omitempty"`
	// Text says how it was derived, or why it could not be.
	Text string `json:"text,omitempty"`
}

// LineFinding is a finding of a fitted line's slope: its value, interval
// and fit.
func LineFinding(name, unit string, l Line) Finding {
	return Finding{Name: name, Value: l.Slope, Low: l.SlopeLow, High: l.SlopeHigh, Unit: unit,
		Text: fmt.Sprintf("slope of a least-squares line over %d points, R² %.3f, intercept %.4g", l.N, l.R2, l.Intercept)}
}

// String prints the finding as a report line.
func (f Finding) String() string {
	if f.Unit == "" && f.Value == 0 && f.Low == 0 && f.High == 0 {
		return f.Name + ": " + f.Text
	}
	v := func(x float64) string {
		if f.Unit == "bytes" && x < 0 {
			return "-" + units.BytesSize(-x)
		}
		if f.Unit == "bytes" {
			return units.BytesSize(x)
		}
		return strconv.FormatFloat(x, 'g', 4, 64)
	}
	out := f.Name + ": " + v(f.Value)
	if f.Unit != "" && f.Unit != "bytes" {
		out += " " + f.Unit
	}
	if math.IsInf(f.Low, 0) || math.IsInf(f.High, 0) {
		out += " (no interval: too few points)"
	} else if f.Low != f.Value || f.High != f.Value {
		out += fmt.Sprintf(" (95%% interval %s to %s)", v(f.Low), v(f.High))
	}
	if f.Text != "" {
		out += " — " + f.Text
	}
	return out
}

// PlanInfo describes a run's plan in its result.
type PlanInfo struct {
	// Type is "ladder" or "knee".
	Type string `json:"kind"`
	// Steps are a ladder's steps.
	Steps []Step `json:"steps,omitempty"`
	// Knee is a knee search's parameters.
	Knee *KneeParams `json:"knee,omitempty"`
}

// KneeParams are a knee search's parameters as its result records them
// (see loadtest.Knee, whose fields they are).
type KneeParams struct {
	Start       float64       `json:"start"`
	Factor      float64       `json:"factor"`
	Precision   float64       `json:"precision"`
	Max         float64       `json:"max"`
	MaxProbes   int           `json:"max_probes"`
	Granularity float64       `json:"granularity"`
	Ramp        time.Duration `json:"ramp"`
	Hold        time.Duration `json:"hold"`
	Trials      int           `json:"trials"`
}

// Decide decides Capacity, FirstFailure and Verdict from the steps: a run
// does after every step, a merge of shards once. A level probed more than
// once takes the majority verdict of its valid trials (a tie fails).
func (res *Result) Decide() {
	type tally struct{ pass, fail int }
	levels := map[float64]*tally{}
	for _, s := range res.Steps {
		if s.Idle() {
			continue // the stack at rest: no level of capacity (its verdict counts below)
		}
		t := levels[s.Step.Level]
		if t == nil {
			t = &tally{}
			levels[s.Step.Level] = t
		}
		switch s.Verdict {
		case Pass:
			t.pass++
		case Fail:
			t.fail++
		}
	}
	res.Capacity, res.FirstFailure = 0, 0
	for lvl, t := range levels {
		if t.fail > 0 && t.fail >= t.pass && (res.FirstFailure == 0 || lvl < res.FirstFailure) {
			res.FirstFailure = lvl
		}
	}
	for lvl, t := range levels {
		if t.pass > t.fail && (res.FirstFailure == 0 || lvl < res.FirstFailure) {
			res.Capacity = max(res.Capacity, lvl)
		}
	}
	res.CapacityLowerBound = res.Capacity > 0 && res.FirstFailure == 0
	verdicts := make([]Verdict, 0, len(res.Steps))
	idleFailed := false
	for _, s := range res.Steps {
		verdicts = append(verdicts, s.Verdict)
		idleFailed = idleFailed || s.Idle() && s.Verdict == Fail
	}
	switch {
	case res.Partial || slices.Contains(verdicts, Incomplete) || len(verdicts) == 0:
		res.Verdict = Incomplete
	case slices.Contains(verdicts, Invalid):
		res.Verdict = Invalid
	case res.Plan.Type == "knee" && res.Capacity > 0:
		// A knee search fails probes on purpose: the lowest failure
		// brackets the knee. It passes when it found a level that held.
		res.Verdict = Pass
	case res.FirstFailure > 0 || idleFailed:
		res.Verdict = Fail // an idle row fails when the stack stopped at rest
	default:
		res.Verdict = Pass
	}
	res.Projection = res.Project()
}

// LevelUnit names the unit of the result's levels: "users" for modeled
// users, "arrivals/s" for the open model.
func (res *Result) LevelUnit() string {
	if res.Model == "users" {
		return "users"
	}
	return "arrivals/s"
}

// CapacityText renders the capacity as a headline may claim it, no more:
// "730 users" where a higher level failed; "≥ 800 users (the ladder's
// top; nothing near a limit)" where nothing gave out, saying why the
// figure stops there; "none (no level held)" where no level passed.
func (res *Result) CapacityText() string {
	lvl := format.Level(res.Capacity) + " " + res.LevelUnit()
	switch {
	case res.Capacity <= 0 && res.FirstFailure > 0:
		return fmt.Sprintf("none (below %s %s, the lowest level probed)", format.Level(res.FirstFailure), res.LevelUnit())
	case res.Capacity <= 0:
		return "none (no level held)"
	case !res.CapacityLowerBound:
		return lvl
	}
	return "≥ " + lvl + " (" + res.boundReason() + ")"
}

// boundReason says why a lower bound stops where it does: the harness
// reached its limit at a higher level, the run was interrupted, or the plan
// ended — with what came near a limit at the top level, if anything.
func (res *Result) boundReason() string {
	for _, s := range res.Steps {
		if s.Verdict == Invalid && s.Step.Level > res.Capacity {
			return fmt.Sprintf("the generator or the harness reached its limit first, at %s", format.Level(s.Step.Level))
		}
	}
	if res.Partial {
		return "the run was interrupted"
	}
	top := "the ladder's top"
	if res.Plan.Type == "knee" {
		top = "the search's maximum"
	}
	for _, s := range slices.Backward(res.Steps) {
		if s.Step.Level == res.Capacity && s.Verdict == Pass && len(s.Saturated) > 0 {
			return top + "; near a limit there: " + strings.Join(s.Saturated, "; ")
		}
	}
	return top + "; nothing near a limit"
}

// The classes of what [Result.Err] reports; test them with errors.Is.
var (
	// ErrBreach: a step violated a check, or no step passed.
	ErrBreach = errors.New("SLO breach")
	// ErrInvalid: a step said nothing about the target — the generator was
	// the bottleneck, or a check had too little data to judge.
	ErrInvalid = errors.New("invalid step")
	// ErrIncomplete: the run stopped before its plan ended (an interrupt,
	// the test's deadline).
	ErrIncomplete = errors.New("incomplete run")
	// ErrRegression: the run regressed against its baseline.
	ErrRegression = errors.New("regression")
)

// verdictError is one line of Result.Err, of one class.
type verdictError struct {
	class error
	msg   string
}

func (e verdictError) Error() string { return e.msg }
func (e verdictError) Unwrap() error { return e.class }

// Err is the run's verdict as one error, nil when the run passed: every
// check a step violated, every reason a step was invalid, no step passing,
// an incomplete run, and every regression against the baseline — each line
// naming the step, the check or figure, the bound and the measured value.
// errors.Is tells the classes apart: [ErrBreach], [ErrInvalid],
// [ErrIncomplete], [ErrRegression]. A comparison with the baseline that was
// skipped or impossible is not an error; the result and its report say why.
func (res *Result) Err() error {
	var errs []error
	add := func(class error, format string, args ...any) {
		errs = append(errs, verdictError{class, fmt.Sprintf(format, args...)})
	}
	// A knee search's failing probes bracket the knee: they are its
	// finding, not a breach, once a lower level held.
	knee := res.Plan.Type == "knee" && res.Capacity > 0
	failed := false
	for _, s := range res.Steps {
		at := fmt.Sprintf("step %d (level %g)", s.Index+1, s.Step.Level)
		if s.Verdict == Fail && !knee {
			// An invalid step's violations are not the target's: they stay
			// in the step for the record, not in the verdict.
			failed = true
			for _, v := range s.Violations {
				add(ErrBreach, "%s: %s", at, v)
			}
		}
		if s.Verdict == Fail && !knee && len(s.Saturated) > 0 {
			add(ErrBreach, "%s: near its limit: %s", at, strings.Join(s.Saturated, "; "))
		}
		if s.Verdict == Fail && !knee && s.Self.Backlog != "" {
			add(ErrBreach, "%s: %s", at, s.Self.Backlog)
		}
		for _, v := range s.InvalidReasons() {
			add(ErrInvalid, "%s is invalid: %s", at, v)
		}
	}
	if failed && res.Capacity == 0 && !res.Partial {
		add(ErrBreach, "no step passed: the target did not hold the lowest level probed")
	}
	if res.Partial || res.Verdict == Incomplete {
		why := res.Conclusion
		if why == "" {
			why = "the run did not finish"
		}
		add(ErrIncomplete, "incomplete: %s", why)
	}
	if res.Baseline != nil {
		for _, r := range res.Baseline.Regressions {
			add(ErrRegression, "regression against %s: %s", res.Baseline.Path, r)
		}
	}
	return errors.Join(errs...)
}

// Invalid returns why steps were invalid (the generator was the
// bottleneck, or a check had too little data), one line per reason; empty
// when every step was valid.
func (res *Result) Invalid() []string {
	var out []string
	for _, s := range res.Steps {
		for _, r := range s.InvalidReasons() {
			out = append(out, fmt.Sprintf("step %d (level %g): %s", s.Index+1, s.Step.Level, r))
		}
	}
	return out
}

// Kinds returns the names of the kinds measured, in the workload's order.
func (res *Result) Kinds() []string {
	var out []string
	for _, s := range res.Steps {
		for _, k := range s.Kinds {
			if !slices.Contains(out, k.Kind) {
				out = append(out, k.Kind)
			}
		}
	}
	return out
}

// WriteFile writes res as indented JSON to path atomically: to a temporary
// file in the same directory, then renamed, so a reader never sees half a
// result. Missing directories are created.
func (res *Result) WriteFile(path string) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("result: encode: %w", err)
	}
	return files.WriteAtomic(path, append(b, '\n'))
}

// ReadResult reads a result written by WriteFile.
func ReadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var res Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("result %s: not a Headroom result, or a damaged one: %w", path, err)
	}
	if res.Schema < 1 {
		return nil, fmt.Errorf("result %s: not a Headroom result (no schema): give a result a run wrote, testdata/results/<Test>/<sub>.json or headroom run -o", path)
	}
	if res.Schema > SchemaVersion {
		return nil, fmt.Errorf("result %s: schema %d is newer than this Headroom's %d; upgrade", path, res.Schema, SchemaVersion)
	}
	return &res, nil
}
