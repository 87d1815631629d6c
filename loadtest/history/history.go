// Package history keeps a capacity history: one row per test pass, appended
// to a JSON Lines file (one file per repository, by default
// testdata/history.jsonl) and rendered newest first as the history table
// that ends a published load-test report:
//
//	| Date | Commit | Users | Change | What changed |
//	|---|---|---:|---:|---|
//	| 2026-08-31 | `1a2b3c4` | **8,859** | — | Workload model rebuilt — new baseline, not comparable with earlier rows |
//	| 2026-07-22 (6) | `5d6e7f8` | 10,125 | ±0% | Session validation collapsed to one database query |
//	| 2026-07-22 (5) | `9a0b1c2` | **10,125** | +4.4% | Database pools keep idle connections |
//
// # Rows
//
// [RowFromResult] makes a [Row] of a result: its date (the run's start),
// commit, scenario, plan, headline figure (the result's Capacity in the
// level's unit: users, or arrivals/s for the open model), verdict,
// environment class, conclusion and a free-text note of what changed.
// [Append] adds rows to the file and never rewrites it; [Read] reads them
// back; [Order] sorts them newest first and works out which row each one
// compares with; [Markdown] and [Text] render the table.
//
// # Comparability
//
// A row compares with an earlier row of the same scenario when both
//
//   - ran the same workload model (users, arrivals);
//   - ran the same plan, as far as it decides the figure: a ladder's
//     levels, ramps and holds; a knee search's precision, ramp, hold and
//     trials (its start, factor, maximum, probe budget and granularity only
//     steer the search, so raising the maximum after a lower bound keeps
//     the rows comparable);
//   - held the same checks (the result's Checks, in any order): a changed
//     SLO bar changes what the capacity means;
//   - were measured in the same environment class (CPU model, cores,
//     backend, target limits: [result.Environment.Class]);
//   - were both -short runs or both full runs;
//   - set the same workload knobs: the result's Params whose names are
//     environment knobs (upper case, such as GAP or SUBSCRIBERS), except
//     the ones the plan or the random stream already account for (the
//     levels USERS, RATES, RATE, STEPS, STREAMS; RAMP, HOLD, DURATION; a
//     knee's START, FACTOR, MAX, PRECISION, PROBES; SEED). Derived parameters
//     (lower case, such as a seeded population's description) describe a
//     run and may differ from one run to the next (a population is dated),
//     so they are not compared;
//
// and no row between them (or the row itself) was marked as a new baseline
// ([Row.NewBaseline], headroom history add -new-baseline): a change no knob
// records, such as a rebuilt workload model, is declared that way.
//
// A row's change is against the previous comparable row of its scenario —
// the latest earlier row that compares with it, invalid rows (the
// generator, not the target, was the limit) excepted.
//
// # Emphasis
//
// A headline is bold when it says something new: when it differs from the
// previous comparable row's (the figure as printed, or a lower bound
// becoming a measured knee), or when there is no previous comparable row (a
// scenario's first row, a new baseline). An unchanged figure is plain.
//
// # Bounds
//
// A figure is a lower bound, printed "≥ N", when no level failed: the true
// capacity lies above the highest level that held. That is a knee search
// that found no breach up to its maximum (its conclusion says "no breach up
// to the maximum level"), a ladder whose every step passed, or a plan
// stopped early by an invalid step. A run where no level passed and one
// failed prints "< N", N its lowest failing level.
package history

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Schema is the version of the row format. It changes when a field changes
// meaning or is removed; new fields do not change it.
const Schema = 1

// Row is one test pass in the history.
type Row struct {
	// Schema is the row format's version at the time of writing.
	Schema int `json:"schema"`
	// Date is when the run started.
	Date time.Time `json:"date"`
	// Scenario is the result's scenario.
	Scenario string `json:"scenario"`
	// Commit is the git commit measured, and Dirty whether its working tree
	// had uncommitted changes.
	Commit string `json:"commit,omitempty"`
	Dirty  bool   `json:"dirty,omitempty"`
	// Subject is the commit's subject line, when known (see
	// [CommitSubject]): what changed, when no Note says.
	Subject string `json:"subject,omitempty"`
	// Model is the workload model: "users", "arrivals" or "custom".
	Model string `json:"model,omitempty"`
	// Unit is the headline's unit: "users", "arrivals/s", or empty when the
	// result does not tell.
	Unit string `json:"unit,omitempty"`
	// Plan is the plan's kind: "ladder" or "knee".
	Plan string `json:"plan"`
	// PlanKey describes what of the plan decides the figure; rows of
	// different plan keys do not compare.
	PlanKey string `json:"plan_key"`
	// Capacity is the headline figure: the highest level that held.
	Capacity float64 `json:"capacity"`
	// FirstFailure is the lowest level that failed; 0 when none did.
	FirstFailure float64 `json:"first_failure,omitempty"`
	// LowerBound is set when no level failed: the capacity is at least
	// Capacity.
	LowerBound bool `json:"lower_bound,omitempty"`
	// Verdict is the result's: pass, fail or invalid (never incomplete).
	Verdict result.Verdict `json:"verdict"`
	// Partial is the result's: the run was interrupted. Such rows are
	// refused.
	Partial bool `json:"partial,omitempty"`
	// Short marks a -short run.
	Short bool `json:"short,omitempty"`
	// Checks are the result's checks, as text.
	Checks []string `json:"checks,omitempty"`
	// Class is the environment class the result was measured in.
	Class string `json:"class"`
	// Params are the result's scenario parameters (see the package
	// documentation for which of them decide comparability).
	Params map[string]string `json:"params,omitempty"`
	// Conclusion says why the plan stopped, in a sentence.
	Conclusion string `json:"conclusion,omitempty"`
	// Figures are the run's figures beside its capacity (see [Figure]),
	// pooled over its valid steps; [Changes] searches their series.
	Figures []Figure `json:"figures,omitempty"`
	// Command is the go test command that repeats the run.
	Command string `json:"command,omitempty"`
	// Result is the result file the row was made of, relative to the
	// module root when under it.
	Result string `json:"result,omitempty"`
	// Note says what changed since the previous row; the commit's subject
	// stands in when it is empty.
	Note string `json:"note,omitempty"`
	// NewBaseline marks the row as not comparable with any earlier row.
	NewBaseline bool `json:"new_baseline,omitempty"`

	// The fields below are worked out by Order, not stored.

	// Label is the row's date as the table prints it, numbered among the
	// table's rows of the same day when there are several: "2026-07-22 (6)".
	Label string `json:"-"`
	// Comparable says whether the row compares with the previous row of
	// its scenario; false for a scenario's first row.
	Comparable bool `json:"-"`
	// Break says why the row does not compare with the previous row of its
	// scenario; empty when it does, or when it is the scenario's first row.
	Break string `json:"-"`
	// Previous is the previous comparable row of the scenario, the one the
	// change is against; nil when there is none.
	Previous *Row `json:"-"`

	// previousAdjacent: Previous is the row just before this one in the
	// scenario.
	previousAdjacent bool
}

// RowFromResult makes a history row of res, with note saying what changed
// (may be empty). Subject, Result and NewBaseline are left for the caller.
func RowFromResult(res *loadtest.Result, note string) Row {
	return Row{
		Schema:       Schema,
		Date:         res.Start.UTC(),
		Scenario:     res.Scenario,
		Commit:       res.Provenance.Commit,
		Dirty:        res.Provenance.Dirty,
		Model:        res.Model,
		Unit:         unitOf(res),
		Plan:         res.Plan.Type,
		PlanKey:      planKey(res.Plan),
		Capacity:     res.Capacity,
		FirstFailure: res.FirstFailure,
		LowerBound:   lowerBound(res),
		Verdict:      res.Verdict,
		Partial:      res.Partial,
		Short:        res.Short,
		Checks:       slices.Clone(res.Checks),
		Class:        res.Environment.Class,
		Params:       maps.Clone(res.Params),
		Conclusion:   res.Conclusion,
		Figures:      figuresOf(ab.Measures(res)),
		Command:      res.Provenance.Command,
		Note:         strings.TrimSpace(note),
	}
}

// Validate reports why r may not enter a history: an interrupted or
// incomplete run (its figure is not a capacity), a row of no scenario or
// date, a row of a newer format.
func (r Row) Validate() error {
	switch {
	case r.Partial || r.Verdict == result.Incomplete:
		why := strings.TrimSuffix(r.Conclusion, ".")
		if why == "" {
			why = "the run did not finish"
		}
		return fmt.Errorf("incomplete result (%s): a history records finished runs only — run the scenario to the end and add that result", why)
	case r.Scenario == "":
		return fmt.Errorf("a row without a scenario: add a result written by a scenario run")
	case r.Date.IsZero():
		return fmt.Errorf("a row without a date: add a result written by a scenario run")
	case r.Schema > Schema:
		return fmt.Errorf("row format %d is newer than this Headroom's %d; upgrade", r.Schema, Schema)
	}
	return nil
}

// unitOf returns the unit of res's levels: users for the closed model,
// arrivals per second for the open one; a custom workload's knobs may tell.
func unitOf(res *loadtest.Result) string {
	switch res.Model {
	case "users":
		return "users"
	case "arrivals":
		return "arrivals/s"
	}
	if _, ok := res.Params["USERS"]; ok {
		return "users"
	}
	for _, k := range []string{"RATES", "RATE"} {
		if _, ok := res.Params[k]; ok {
			return "arrivals/s"
		}
	}
	return ""
}

// kneeNoBreach is how a knee search that found no breach concludes (see
// loadtest.Knee.Conclude).
const kneeNoBreach = "no breach up to the maximum level"

func lowerBound(res *loadtest.Result) bool {
	if res.Capacity <= 0 {
		return false
	}
	return res.CapacityLowerBound || res.FirstFailure == 0 || res.Plan.Type == "knee" && strings.Contains(res.Conclusion, kneeNoBreach)
}

// planKey describes what of plan p decides the figure.
func planKey(p result.PlanInfo) string {
	switch {
	case p.Type == "ladder":
		var levels, each []string
		uniform := true
		for i, s := range p.Steps {
			levels = append(levels, strconv.FormatFloat(s.Level, 'g', -1, 64))
			each = append(each, fmt.Sprintf("%g %s", s.Level, stepShape(s)))
			if i > 0 && stepShape(s) != stepShape(p.Steps[0]) {
				uniform = false
			}
		}
		if len(p.Steps) == 0 {
			return "ladder"
		}
		if uniform {
			return fmt.Sprintf("ladder %s %s", strings.Join(levels, ","), stepShape(p.Steps[0]))
		}
		return "ladder " + strings.Join(each, ", ")
	case p.Type == "knee" && p.Knee != nil:
		k := *p.Knee
		// The defaults of loadtest.Knee.
		if k.Precision == 0 {
			k.Precision = 0.1
		}
		if k.Trials == 0 {
			k.Trials = 1
		}
		return fmt.Sprintf("knee ±%g%% (ramp %v, hold %v, %d trial(s))", k.Precision*100, k.Ramp, k.Hold, k.Trials)
	}
	return p.Type
}

func stepShape(s loadtest.Step) string {
	z := ""
	if s.FromZero {
		z = ", from zero"
	}
	return fmt.Sprintf("(ramp %v, hold %v%s)", s.Ramp, s.Hold, z)
}

// otherKnobs are knobs the plan (compared on its own) or the random stream
// account for: they do not decide comparability.
var otherKnobs = map[string]bool{
	"USERS": true, "RATES": true, "RATE": true, "STEPS": true, "STREAMS": true,
	"RAMP": true, "HOLD": true, "DURATION": true, "SEED": true,
	// loadtest.Knobs.Knee's
	"START": true, "FACTOR": true, "MAX": true, "PRECISION": true, "PROBES": true,
}

// knobs returns the workload knobs of params: the upper-case names the
// plan does not account for.
func knobs(params map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range params {
		if k == strings.ToUpper(k) && k != strings.ToLower(k) && !otherKnobs[k] {
			out[k] = v
		}
	}
	return out
}

// differences lists why cur does not compare with prev; empty when it does.
// A row marked as a new baseline compares with none before it.
func differences(prev, cur *Row) []string {
	var why []string
	if prev.Scenario != cur.Scenario {
		why = append(why, fmt.Sprintf("scenario %s → %s", prev.Scenario, cur.Scenario))
	}
	if prev.Model != cur.Model {
		why = append(why, fmt.Sprintf("workload model %s → %s", orNone(prev.Model), orNone(cur.Model)))
	}
	if prev.PlanKey != cur.PlanKey {
		why = append(why, fmt.Sprintf("plan %s → %s", orNone(prev.PlanKey), orNone(cur.PlanKey)))
	}
	if prev.Short != cur.Short {
		why = append(why, fmt.Sprintf("run size %s → %s", size(prev.Short), size(cur.Short)))
	}
	if d := checksDiff(prev.Checks, cur.Checks); d != "" {
		why = append(why, "checks "+d)
	}
	if prev.Class != cur.Class {
		why = append(why, "environment class "+classDiff(prev.Class, cur.Class))
	}
	pk, ck := knobs(prev.Params), knobs(cur.Params)
	names := slices.Sorted(maps.Keys(pk))
	for k := range ck {
		if _, ok := pk[k]; !ok {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	for _, k := range names {
		pv, pok := pk[k]
		cv, cok := ck[k]
		if pv != cv || pok != cok {
			why = append(why, fmt.Sprintf("knob %s %s → %s", k, knobValue(pv, pok), knobValue(cv, cok)))
		}
	}
	return why
}

// checksDiff says which checks were added and removed; "" when the two
// sets are the same.
func checksDiff(prev, cur []string) string {
	var out []string
	for _, c := range cur {
		if !slices.Contains(prev, c) {
			out = append(out, fmt.Sprintf("+%q", c))
		}
	}
	for _, c := range prev {
		if !slices.Contains(cur, c) {
			out = append(out, fmt.Sprintf("-%q", c))
		}
	}
	return strings.Join(out, ", ")
}

func size(short bool) string {
	if short {
		return "-short"
	}
	return "full"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func knobValue(v string, ok bool) string {
	if !ok {
		return "(unset)"
	}
	return v
}

// classDiff names the fields of two classes ("cpu_model=…;cores=2;…")
// that differ.
func classDiff(a, b string) string {
	af, bf := strings.Split(a, ";"), strings.Split(b, ";")
	if a == "" || b == "" || len(af) != len(bf) {
		return fmt.Sprintf("%s → %s", orNone(a), orNone(b))
	}
	var out []string
	for i := range af {
		an, av, _ := strings.Cut(af[i], "=")
		bn, bv, _ := strings.Cut(bf[i], "=")
		if an != bn {
			return fmt.Sprintf("%s → %s", a, b)
		}
		if av != bv {
			out = append(out, fmt.Sprintf("%s %s → %s", an, av, bv))
		}
	}
	return strings.Join(out, ", ")
}

// Matches reports whether a row of scenario name belongs to the history of
// scenario: the same name, or one of its subtests ("TestLoad_Smoke"
// matches "TestLoad_Smoke/backend=docker/db=postgres"). An empty scenario
// matches every row.
func Matches(scenario, name string) bool {
	return scenario == "" || name == scenario || strings.HasPrefix(name, scenario+"/")
}

// Order returns the rows of scenario (every row when scenario is empty; see
// [Matches]) newest first, with Label, Comparable, Break and Previous
// worked out. Rows of the same start keep the order they were added in.
// rows is not changed.
func Order(rows []Row, scenario string) []Row {
	asc := make([]Row, 0, len(rows))
	for _, r := range rows {
		if Matches(scenario, r.Scenario) {
			r.Label, r.Comparable, r.Break, r.Previous, r.previousAdjacent = "", false, "", nil, false
			asc = append(asc, r)
		}
	}
	slices.SortStableFunc(asc, func(a, b Row) int { return a.Date.Compare(b.Date) })

	// Labels: the day, numbered when the table has several rows of it.
	perDay := map[string]int{}
	for _, r := range asc {
		perDay[day(r.Date)]++
	}
	seen := map[string]int{}
	for i := range asc {
		d := day(asc[i].Date)
		asc[i].Label = d
		if perDay[d] > 1 {
			seen[d]++
			asc[i].Label = fmt.Sprintf("%s (%d)", d, seen[d])
		}
	}

	// Comparability, scenario by scenario.
	byScenario := map[string][]int{}
	for i, r := range asc {
		byScenario[r.Scenario] = append(byScenario[r.Scenario], i)
	}
	for _, idx := range byScenario {
		since := 0 // the latest row marked as a new baseline
		for n, i := range idx {
			cur := &asc[i]
			if cur.NewBaseline {
				since = n
			}
			if n == 0 {
				continue
			}
			prev := &asc[idx[n-1]]
			switch why := differences(prev, cur); {
			case cur.NewBaseline:
				cur.Break = "marked as a new baseline"
			case len(why) > 0:
				cur.Break = strings.Join(why, "; ")
			default:
				cur.Comparable = true
			}
			if cur.NewBaseline {
				continue
			}
			for m := n - 1; m >= since; m-- {
				p := &asc[idx[m]]
				if p.Verdict != result.Invalid && p.Verdict != result.Incomplete && len(differences(p, cur)) == 0 {
					cur.Previous, cur.previousAdjacent = p, m == n-1
					break
				}
			}
		}
	}
	out := make([]Row, len(asc))
	for i := range asc {
		out[len(asc)-1-i] = asc[i]
	}
	return out
}

func day(t time.Time) string { return t.UTC().Format("2006-01-02") }
