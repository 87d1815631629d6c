package ab

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/headroom-dev/headroom/loadtest"
)

// Arm is one side of a comparison: A, the base (the known-good build), or
// B, the head (the change under test).
type Arm int

// The arms.
const (
	A Arm = iota
	B
)

// String returns "A" or "B".
func (a Arm) String() string { return [...]string{"A", "B"}[a] }

// DefaultTrials is the number of trials per arm when Config.Trials is 0: at
// five each, a complete separation of the arms is significant at 0.008.
const DefaultTrials = 5

// Order returns the order of 2n trials: n blocks of one A and one B, each
// block's order drawn from seed ("A B B A A B …"), so that drift and
// periodic noise on a shared machine fall on both arms alike.
func Order(n int, seed uint64) []Arm {
	r := rand.New(rand.NewPCG(seed, 0xab))
	out := make([]Arm, 0, 2*n)
	for range n {
		if r.IntN(2) == 0 {
			out = append(out, A, B)
		} else {
			out = append(out, B, A)
		}
	}
	return out
}

// Config is how Run runs the trials. Zero fields take the defaults.
type Config struct {
	// Trials is the number of trials per arm; default DefaultTrials.
	Trials int
	// MaxTrials is the most trials per arm. While a primary figure is
	// neither shown the same nor different — inconclusive, or different
	// alone but not after the correction for the number of primary
	// figures — and no regression is shown, blocks of one A and one B are
	// added until every report settles or MaxTrials is reached. Default
	// 2×Trials; equal to Trials adds none. Among more than six primary
	// figures no difference can be shown before 6 trials per arm (see
	// FamilyAlpha).
	MaxTrials int
	// Seed decides the order of the trials; default 1.
	Seed uint64
	// Matters is the smallest relative change of a figure that matters,
	// as a fraction of arm A's median (0.2 = 20%), for every figure whose
	// own band is narrower (5% for cost and throughput, 10% for latency).
	// A search for a change of known size — a bisection of a ×1.5
	// regression — sets it to about half that size, so that noise between
	// two builds of the same cost is not taken for a change; 0 keeps each
	// figure's own band.
	Matters float64
	// Primary names the figures that decide the verdict, exactly as a
	// report prints them ("p95 dashboard", "cpu/ok relay", "throughput"):
	// only they are corrected for together and extend the trials, and
	// they are judged even with few samples; the other figures are
	// reported. Nil: every judged figure but the harness's cost and
	// memory (see figuresOf). Run fails with ErrUnknownFigure as soon as
	// each arm has a valid result when a name is no figure of it.
	Primary []string
	// Logf receives a line per trial; nil discards them.
	Logf func(format string, args ...any)
}

// ErrUnknownFigure is the error of Run when Config.Primary names a figure
// the trials do not yield.
var ErrUnknownFigure = errors.New("ab: unknown figure")

// unknownError names the unknown figures of a scenario and the figures it has.
func unknownError(scenario string, unknown []string, figs []Figure) error {
	names := make([]string, len(figs))
	for i, f := range figs {
		names[i] = fmt.Sprintf("%q", f.Name)
	}
	quoted := make([]string, len(unknown))
	for i, u := range unknown {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	return fmt.Errorf("%w: %s is no figure of %s; name figures as the report prints them: %s",
		ErrUnknownFigure, strings.Join(quoted, ", "), scenario, strings.Join(names, ", "))
}

// TrialFunc runs trial i (from 0) of arm and returns its results: one per
// scenario it ran (a test with subtests yields several). An error rejects
// the trial; the comparison goes on with the others.
type TrialFunc func(ctx context.Context, arm Arm, i int) ([]*loadtest.Result, error)

// validate checks cfg and fills in its defaults.
func (cfg *Config) validate() error {
	if cfg.Trials == 0 {
		cfg.Trials = DefaultTrials
	}
	if cfg.Trials < 1 {
		return fmt.Errorf("ab: Trials is %d; give at least 2 per arm (5 or more to be able to show a difference)", cfg.Trials)
	}
	if cfg.MaxTrials == 0 {
		cfg.MaxTrials = 2 * cfg.Trials
	}
	if cfg.MaxTrials < cfg.Trials {
		return fmt.Errorf("ab: MaxTrials is %d, below Trials %d; give at least as many, or 0 for twice Trials", cfg.MaxTrials, cfg.Trials)
	}
	if !(cfg.Matters >= 0 && cfg.Matters < 1) {
		return fmt.Errorf("ab: Matters is %g; give the smallest change that matters as a fraction of A's median, at least 0 and below 1 (0.2 for 20%%)", cfg.Matters)
	}
	for _, name := range cfg.Primary {
		if name == "" || strings.TrimSpace(name) != name {
			return fmt.Errorf("ab: Primary holds %q; name each figure exactly as the report prints it, e.g. \"p95 dashboard\"", name)
		}
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return nil
}

// trials holds the figures of the trials run so far, scenario by
// scenario, each result's figures computed once.
type trials struct {
	scenarios []string
	vals      map[string]*[2][]figureValues
	results   map[string]*[2]int  // results per arm, valid or not
	rejected  map[string][]string // results with no valid step
	failed    []string            // trials that gave no result
	count     [2]int              // trials run per arm
}

func newTrials() *trials {
	return &trials{vals: map[string]*[2][]figureValues{}, results: map[string]*[2]int{}, rejected: map[string][]string{}}
}

// add records the results of a trial of arm.
func (t *trials) add(arm Arm, rs []*loadtest.Result) {
	for _, r := range rs {
		if t.vals[r.Scenario] == nil {
			t.vals[r.Scenario] = &[2][]figureValues{}
			t.results[r.Scenario] = &[2]int{}
			t.scenarios = append(t.scenarios, r.Scenario)
		}
		t.results[r.Scenario][arm]++
		fv, ok := figuresOf(r)
		if !ok {
			t.rejected[r.Scenario] = append(t.rejected[r.Scenario],
				fmt.Sprintf("%s result %d: %s, no valid step", arm, t.results[r.Scenario][arm], r.Verdict))
			continue
		}
		t.vals[r.Scenario][arm] = append(t.vals[r.Scenario][arm], fv)
	}
}

// checkPrimary checks the names of primary against each scenario's first
// valid result of each arm: done is false until every scenario seen has
// both, and err is ErrUnknownFigure when a name is no figure of them.
func (t *trials) checkPrimary(primary []string) (done bool, err error) {
	if len(primary) == 0 {
		return true, nil
	}
	if len(t.scenarios) == 0 {
		return false, nil
	}
	for _, s := range t.scenarios {
		if v := t.vals[s]; len(v[A]) == 0 || len(v[B]) == 0 {
			return false, nil
		}
	}
	for _, s := range t.scenarios {
		v := t.vals[s]
		figs := Config{}.roles([2][]figureValues{v[A][:1], v[B][:1]})
		if unknown := unknownFigures(primary, figs); len(unknown) > 0 {
			return true, unknownError(s, unknown, figs)
		}
	}
	return true, nil
}

// reports compares the trials so far, one report per scenario.
func (t *trials) reports(cfg Config) []*Report {
	var reports []*Report
	for _, s := range t.scenarios {
		rej := append(slices.Clone(t.failed), t.rejected[s]...)
		reports = append(reports, cfg.compare(s, *t.vals[s], rej))
	}
	if len(reports) == 0 && len(t.failed) > 0 {
		reports = append(reports, &Report{Verdict: Undecided, Rejected: t.failed,
			Reason: "no trial gave a result: " + strings.Join(t.failed, "; ")})
	}
	return reports
}

// hopeless says why more trials cannot settle the comparison: an arm none
// of whose trials gave a valid result — a build that fails, a scenario
// that cannot start, a target every trial of which is invalid — will not
// give one in the next; "" when more trials may help.
func (t *trials) hopeless() string {
	if len(t.scenarios) == 0 {
		return "no trial of either arm gave a result, and more would fail the same way: mend what the trials' logs say"
	}
	for _, s := range t.scenarios {
		for _, arm := range []Arm{A, B} {
			if len(t.vals[s][arm]) == 0 {
				return fmt.Sprintf("no trial of arm %s gave a valid result of %s, and more would fail the same way: mend what its trials' logs say", arm, s)
			}
		}
	}
	return ""
}

// Run runs the trials of both arms interleaved in the order Order gives,
// adds blocks while a report is unsettled (Config.MaxTrials), and compares
// them, one report per scenario, in the order the scenarios first
// appeared; each report's Stop, also appended to its Reason, says how the
// trials ended. It stops early, returning ctx's error with what was
// compared so far, when ctx ends, and returns ErrUnknownFigure without
// reports as soon as a name of cfg.Primary is known to be no figure of
// the trials.
func Run(ctx context.Context, cfg Config, trial TrialFunc) ([]*Report, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := newTrials()
	checked := false
	run := func(order []Arm) error {
		for _, arm := range order {
			if ctx.Err() != nil {
				return nil
			}
			i := t.count[arm]
			t.count[arm]++
			cfg.Logf("trial %d: arm %s #%d", t.count[A]+t.count[B], arm, i+1)
			rs, err := trial(ctx, arm, i)
			if err != nil {
				t.failed = append(t.failed, fmt.Sprintf("%s trial %d: %v", arm, i+1, err))
				cfg.Logf("  rejected: %v", err)
				continue
			}
			for _, r := range rs {
				cfg.Logf("  %s: %s, capacity %s", r.Scenario, r.Verdict, r.CapacityText())
			}
			t.add(arm, rs)
			if !checked {
				if checked, err = t.checkPrimary(cfg.Primary); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := run(Order(cfg.Trials, cfg.Seed)); err != nil {
		return nil, err
	}
	reports := t.reports(cfg)
	for block := uint64(1); t.count[A] < cfg.MaxTrials && ctx.Err() == nil && t.hopeless() == ""; block++ {
		var unsettled []string
		for _, r := range reports {
			if r.unsettled() {
				unsettled = append(unsettled, fmt.Sprintf("%s: %s", r.Scenario, strings.Join(r.open(), ", ")))
			}
		}
		if len(unsettled) == 0 {
			break
		}
		cfg.Logf("unsettled (%s): one more trial per arm", strings.Join(unsettled, "; "))
		if err := run(Order(1, cfg.Seed+block)); err != nil {
			return nil, err
		}
		reports = t.reports(cfg)
	}
	hopeless := t.hopeless()
	if hopeless != "" {
		cfg.Logf("no more trials: %s", hopeless)
	}
	for _, r := range reports {
		r.stop(max(t.count[A], t.count[B]), ctx.Err() != nil, hopeless)
	}
	return reports, ctx.Err()
}

// stop sets Stop after n trials per arm and appends it to Reason; hopeless
// says why more trials could not have helped.
func (r *Report) stop(n int, interrupted bool, hopeless string) {
	switch {
	case interrupted:
		r.Stop = fmt.Sprintf("interrupted after %d trials per arm", n)
	case hopeless != "":
		r.Stop = fmt.Sprintf("stopped after %d trials per arm: %s", n, hopeless)
	case !r.unsettled():
		r.Stop = fmt.Sprintf("settled after %d trials per arm", n)
	default:
		r.Stop = fmt.Sprintf("stopped at max trials (%d per arm)", n)
		if open := r.open(); len(open) > 0 {
			r.Stop += fmt.Sprintf(" with %s still inconclusive", strings.Join(open, ", "))
		}
		if need := familyTrialsNeeded(r.Deciding, FamilyAlpha); r.Deciding > 0 && need > n {
			r.Stop += fmt.Sprintf("; among %d primary figures no difference can show before %d trials per arm", r.Deciding, need)
		}
	}
	r.Reason += "; " + r.Stop
}
