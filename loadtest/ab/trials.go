package ab

import (
	"context"
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
	// MaxTrials is the most trials per arm when the first Trials leave a
	// primary figure unsettled — inconclusive, its estimate worse by more
	// than what matters (one stray trial widens an interval that much):
	// blocks of one A and one B are added until every report settles or
	// MaxTrials is reached. Default 2×Trials; equal to Trials adds none.
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
	// Logf receives a line per trial; nil discards them.
	Logf func(format string, args ...any)
}

// TrialFunc runs trial i (from 0) of arm and returns its results: one per
// scenario it ran (a test with subtests yields several). An error rejects
// the trial; the comparison goes on with the others.
type TrialFunc func(ctx context.Context, arm Arm, i int) ([]*loadtest.Result, error)

// Run runs the trials of both arms interleaved in the order Order gives,
// adds blocks while a report is unsettled (Config.MaxTrials), and compares
// them, one report per scenario, in the order the scenarios first
// appeared. It stops early, returning ctx's error with what was compared
// so far, when ctx ends.
func Run(ctx context.Context, cfg Config, trial TrialFunc) ([]*Report, error) {
	if cfg.Trials == 0 {
		cfg.Trials = DefaultTrials
	}
	if cfg.Trials < 1 {
		return nil, fmt.Errorf("ab: Trials is %d; give at least 2 per arm (5 or more to be able to show a difference)", cfg.Trials)
	}
	if cfg.MaxTrials == 0 {
		cfg.MaxTrials = 2 * cfg.Trials
	}
	if cfg.MaxTrials < cfg.Trials {
		return nil, fmt.Errorf("ab: MaxTrials is %d, below Trials %d; give at least as many, or 0 for twice Trials", cfg.MaxTrials, cfg.Trials)
	}
	if !(cfg.Matters >= 0 && cfg.Matters < 1) {
		return nil, fmt.Errorf("ab: Matters is %g; give the smallest change that matters as a fraction of A's median, at least 0 and below 1 (0.2 for 20%%)", cfg.Matters)
	}
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	var scenarios []string
	results := map[string]*[2][]*loadtest.Result{}
	var rejected []string
	count := [2]int{}
	n := 0
	run := func(order []Arm) {
		for _, arm := range order {
			if ctx.Err() != nil {
				return
			}
			i := count[arm]
			count[arm]++
			n++
			cfg.Logf("trial %d: arm %s #%d", n, arm, i+1)
			rs, err := trial(ctx, arm, i)
			if err != nil {
				rejected = append(rejected, fmt.Sprintf("%s trial %d: %v", arm, i+1, err))
				cfg.Logf("  rejected: %v", err)
				continue
			}
			for _, r := range rs {
				if results[r.Scenario] == nil {
					results[r.Scenario] = &[2][]*loadtest.Result{}
					scenarios = append(scenarios, r.Scenario)
				}
				results[r.Scenario][arm] = append(results[r.Scenario][arm], r)
				cfg.Logf("  %s: %s, capacity %g", r.Scenario, r.Verdict, r.Capacity)
			}
		}
	}
	compare := func() []*Report {
		var reports []*Report
		for _, s := range scenarios {
			rep := cfg.CompareResults(s, results[s][A], results[s][B])
			rep.Rejected = append(slices.Clone(rejected), rep.Rejected...)
			reports = append(reports, rep)
		}
		if len(reports) == 0 && len(rejected) > 0 {
			reports = append(reports, &Report{Verdict: Undecided, Rejected: rejected,
				Reason: "no trial gave a result: " + strings.Join(rejected, "; ")})
		}
		return reports
	}
	run(Order(cfg.Trials, cfg.Seed))
	reports := compare()
	for block := uint64(1); count[A] < cfg.MaxTrials && ctx.Err() == nil; block++ {
		var unsettled []string
		for _, r := range reports {
			if r.unsettled() {
				unsettled = append(unsettled, r.Scenario)
			}
		}
		if len(unsettled) == 0 {
			break
		}
		cfg.Logf("unsettled (%s): one more trial per arm", strings.Join(unsettled, ", "))
		run(Order(1, cfg.Seed+block))
		reports = compare()
	}
	return reports, ctx.Err()
}
