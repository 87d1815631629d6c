package loadtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Check is one service-level objective evaluated on every step. A check
// returns an error describing each violation; the run collects them all and
// the test decides what to do with them (see [Result.Err]).
//
// A check that cannot judge a step because the step measured too little
// (too few samples for a percentile) returns an error wrapping
// [ErrInsufficientData]: the step is then invalid, neither passed nor
// failed.
type Check interface {
	// Evaluate returns a non-nil error when the step violates the check.
	Evaluate(s *StepResult) error
	// Validate reports a malformed check, given the kinds the workload
	// issues, before anything runs.
	Validate(kinds []string) error
	// String describes the check ("p95 of tools/call < 15s").
	String() string
}

// IdleCheck is a check that also judges an idle step (Level 0: the
// stack at rest, no requests; see [Ladder]) — a component's health, its
// memory. Every other check judges requests, which an idle step has none
// of, and is not applied to one.
type IdleCheck interface {
	Check
	// JudgesIdle reports whether the check applies to an idle step.
	JudgesIdle() bool
}

// judgesIdle reports whether c applies to an idle step.
func judgesIdle(c Check) bool {
	ic, ok := c.(IdleCheck)
	return ok && ic.JudgesIdle()
}

// Latency checks that Kind's latency at Percentile stays below Bound. A step
// without a single successful answer of the kind violates it; a step with
// fewer than MinSamples answers is invalid (a percentile of a handful of
// samples says nothing). [LatencyBelow] builds one with the defaults.
type Latency struct {
	// Kind is the request or sample kind ("tools/call"), or AllRequests
	// for every request kind taken together.
	Kind string
	// Percentile is in (0, 100]: 95 for p95.
	Percentile float64
	// Bound is the latency the percentile must stay below.
	Bound time.Duration
	// MinSamples is the fewest answers from which the percentile is
	// judged. Zero means enough for five samples to lie beyond the
	// percentile on average, and at least 20: 100 for p95, 500 for p99.
	MinSamples int64
}

// LatencyBelow checks that the latency of kind at percentile p (0 < p <= 100)
// stays below bound: LatencyBelow("tools/call", 95, 15*time.Second).
func LatencyBelow(kind string, p float64, bound time.Duration) Check {
	return Latency{Kind: kind, Percentile: p, Bound: bound}
}

// minSamples returns MinSamples or its default.
func (c Latency) minSamples() int64 {
	if c.MinSamples > 0 {
		return c.MinSamples
	}
	if c.Percentile >= 100 {
		return 20
	}
	return max(20, int64(math.Ceil(5/(1-c.Percentile/100)-1e-9)))
}

func (c Latency) String() string {
	return fmt.Sprintf("p%s of %s < %v", formatPercentile(c.Percentile), c.Kind, c.Bound)
}

// Validate implements Check.
func (c Latency) Validate(kinds []string) error {
	var errs []error
	switch {
	case !(c.Percentile > 0 && c.Percentile <= 100):
		errs = append(errs, fmt.Errorf("check %q: percentile %v is outside (0, 100]; write 95 for p95", c, c.Percentile))
	case c.Percentile < 1:
		// 0.95 written for p95 would judge nearly the fastest answer
		// and pass whatever the users saw.
		errs = append(errs, fmt.Errorf("check %q: percentile %v reads as a fraction, but percentiles here run 0–100 (p%v is nearly the fastest answer); write %v for p%v", c, c.Percentile, c.Percentile, c.Percentile*100, c.Percentile*100))
	}
	if c.Bound <= 0 {
		errs = append(errs, fmt.Errorf("check %q: bound %v must be positive", c, c.Bound))
	}
	if c.MinSamples < 0 {
		errs = append(errs, fmt.Errorf("check %q: MinSamples %d is negative; give 0 for the default", c, c.MinSamples))
	}
	errs = append(errs, knownKind(c, c.Kind, kinds))
	return errors.Join(errs...)
}

// Evaluate implements Check.
func (c Latency) Evaluate(s *StepResult) error {
	k := s.Kind(c.Kind)
	if err := noSuccess(c, c.Kind, k); err != nil {
		return err
	}
	if n, need := k.Answered(), c.minSamples(); n < need {
		return fmt.Errorf("%s: %w: %d answered %s, fewer than the %d a p%s needs; lengthen the hold or raise the level",
			c, ErrInsufficientData, n, c.Kind, need, formatPercentile(c.Percentile))
	}
	if got := k.Percentile(c.Percentile); got >= c.Bound {
		// The interval says how sure the breach is: a p95 of a few hundred
		// samples of a long-tailed latency moves by a third.
		lo, hi := k.PercentileBounds(c.Percentile, 1.96)
		return fmt.Errorf("%s: measured %v (95%% interval %v–%v, %d samples)", c, got.Round(time.Microsecond),
			roundLatency(lo), roundLatency(hi), k.Answered())
	}
	return nil
}

// roundLatency rounds d to about three significant digits.
func roundLatency(d time.Duration) time.Duration {
	switch {
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond)
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// Rate checks that the share of Kind's requests ending in Outcome stays
// below Max (0.005 for 0.5%; 0 allows none). An empty Kind checks every
// request kind together; observed kinds (fan-out delays, stream events) are
// not requests and count only when named. A step without a single
// successful answer of the kind violates it. [RateBelow] builds one.
//
// With Alpha set, a step violates it only when its count shows the share
// above Max: when a process whose true share is Max would reach that many
// in that many requests with a probability of at most Alpha (an exact,
// one-sided binomial test). Use it for a bar that sits above a share the
// workload makes on purpose (the upstream's modeled tool errors, 8%,
// against a bar of 15%): a short step's few hundred requests then scatter
// above the bar by chance alone — 8 errors in 50 calls is 16% — and
// without Alpha 4.4% of such steps of 50 calls fail with nothing wrong.
type Rate struct {
	// Kind is the kind checked, or "" (or AllRequests) for every request kind.
	Kind string
	// Outcome is the outcome counted.
	Outcome Outcome
	// Max is the share the rate must stay below, in [0, 1].
	Max float64
	// Alpha, when in (0, 0.5], judges the count against Max at that
	// significance (see above); 0 compares the measured share itself.
	Alpha float64
}

// RateBelow checks that the share of kind's requests ending in o stays below
// max: RateBelow("tools/call", loadtest.TransportError, 0.005).
func RateBelow(kind string, o Outcome, max float64) Check {
	return Rate{Kind: kind, Outcome: o, Max: max}
}

func (c Rate) String() string {
	s := fmt.Sprintf("%s rate of %s < %s", c.Outcome, kindOrAll(c.Kind), format.Pct(c.Max))
	if c.Alpha > 0 {
		s += fmt.Sprintf(" (unless shown above at α %g)", c.Alpha)
	}
	return s
}

// Validate implements Check.
func (c Rate) Validate(kinds []string) error {
	var alpha error
	if math.IsNaN(c.Alpha) || c.Alpha < 0 || c.Alpha > 0.5 {
		alpha = fmt.Errorf("check %q: Alpha %v is outside [0, 0.5]; 0.01 judges the count at 1%%, 0 compares the share itself", c, c.Alpha)
	} else if c.Alpha > 0 && (c.Max <= 0 || c.Max >= 1) {
		alpha = fmt.Errorf("check %q: Alpha needs a Max strictly between 0 and 1", c)
	}
	return errors.Join(validShare(c, c.Max), alpha, validOutcomes(c, c.Outcome), knownKindOrAll(c, c.Kind, kinds))
}

// Evaluate implements Check.
func (c Rate) Evaluate(s *StepResult) error {
	t, err := tallyOf(c, s, c.Kind)
	if err != nil {
		return err
	}
	n := t.counts[c.Outcome]
	if c.Alpha > 0 {
		if r := float64(n) / float64(t.total); r >= c.Max {
			if p := binomialTail(n, t.total, c.Max); p <= c.Alpha {
				return fmt.Errorf("%s: measured %s (%d of %d; at %s, %d or more would come by chance with p=%.2g)", c, format.Pct(r), n, t.total, format.Pct(c.Max), n, p)
			}
		}
		return nil
	}
	return t.below(c, c.Max, n)
}

// binomialTail returns P(X ≥ k) for X ~ Binomial(n, p), summed in log
// space from k up until the terms no longer count.
func binomialTail(k, n int64, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	lgN, _ := math.Lgamma(float64(n) + 1)
	logTerm := func(i int64) float64 {
		a, _ := math.Lgamma(float64(i) + 1)
		b, _ := math.Lgamma(float64(n-i) + 1)
		return lgN - a - b + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p)
	}
	sum := 0.0
	for i := k; i <= n; i++ {
		term := math.Exp(logTerm(i))
		sum += term
		if float64(i) > float64(n)*p && term < sum*1e-12 {
			break // past the mode the terms only shrink
		}
	}
	return math.Min(1, sum)
}

// Failures checks that the share of Kind's requests that did not succeed
// stays below Max: every outcome but OK counts — timeouts and arrivals the
// generator dropped included — except the outcomes named in Except (such as
// AppError, when tool errors are the upstream's and checked on their own).
// An empty Kind checks every request kind together. A step without a
// single successful answer of the kind violates it. [FailuresBelow] builds
// one.
type Failures struct {
	// Kind is the kind checked, or "" (or AllRequests) for every request kind.
	Kind string
	// Max is the share the failures must stay below, in [0, 1].
	Max float64
	// Except lists outcomes that do not count as failures.
	Except []Outcome
}

// FailuresBelow checks that the share of kind's requests that failed stays
// below max, not counting the outcomes in except:
// FailuresBelow("tools/call", 0.005, loadtest.AppError).
func FailuresBelow(kind string, max float64, except ...Outcome) Check {
	return Failures{Kind: kind, Max: max, Except: except}
}

func (c Failures) String() string {
	s := fmt.Sprintf("failures of %s < %s", kindOrAll(c.Kind), format.Pct(c.Max))
	if len(c.Except) > 0 {
		names := make([]string, len(c.Except))
		for i, o := range c.Except {
			names[i] = o.String()
		}
		s += " (not counting " + strings.Join(names, ", ") + ")"
	}
	return s
}

// Validate implements Check.
func (c Failures) Validate(kinds []string) error {
	errs := []error{validShare(c, c.Max), validOutcomes(c, c.Except...), knownKindOrAll(c, c.Kind, kinds)}
	if slices.Contains(c.Except, OK) {
		errs = append(errs, fmt.Errorf("check %q: OK is not a failure; leave it out of Except", c))
	}
	return errors.Join(errs...)
}

// Evaluate implements Check.
func (c Failures) Evaluate(s *StepResult) error {
	t, err := tallyOf(c, s, c.Kind)
	if err != nil {
		return err
	}
	var n int64
	for o := Outcome(1); int(o) < result.NumOutcomes; o++ {
		if !slices.Contains(c.Except, o) {
			n += t.counts[o]
		}
	}
	return t.below(c, c.Max, n)
}

// NoDropped checks that the generator sent every arrival: none was dropped
// for lack of a free worker, which happens when the target holds requests
// so long that the concurrency bound is reached.
func NoDropped() Check { return droppedCheck{} }

type droppedCheck struct{}

func (droppedCheck) String() string            { return "no dropped arrivals" }
func (droppedCheck) Validate(_ []string) error { return nil }
func (droppedCheck) Evaluate(s *StepResult) error {
	if n := s.Count(Dropped); n > 0 {
		return fmt.Errorf("no dropped arrivals: %d dropped", n)
	}
	return nil
}

// Custom is a check by predicate: fn returns an error describing the
// violation, or nil. Name describes it in results.
func Custom(name string, fn func(s *StepResult) error) Check { return customCheck{name, fn} }

type customCheck struct {
	name string
	fn   func(*StepResult) error
}

func (c customCheck) String() string { return c.name }
func (c customCheck) Validate(_ []string) error {
	if c.fn == nil {
		return fmt.Errorf("check %q: the predicate is nil", c.name)
	}
	return nil
}
func (c customCheck) Evaluate(s *StepResult) error {
	if err := c.fn(s); err != nil {
		return fmt.Errorf("%s: %w", c.name, err)
	}
	return nil
}

// tally is the outcome counts of the kinds a check looks at.
type tally struct {
	kind   string
	counts [result.NumOutcomes]int64
	total  int64
}

// tallyOf counts the outcomes of kind in s ("" for every request kind) and
// returns a violation when there is no successful answer to judge.
func tallyOf(c Check, s *StepResult, kind string) (tally, error) {
	t := tally{kind: kind}
	every := kind == "" || kind == AllRequests
	for _, k := range s.Kinds {
		if (every && !k.Observed) || k.Kind == kind {
			for o, n := range k.Outcomes {
				t.counts[o] += n
				t.total += n
			}
		}
	}
	if t.counts[OK] == 0 {
		return t, fmt.Errorf("%s: no successful %s during the hold (%s)", c, kindOrAll(kind), t.describe())
	}
	return t, nil
}

// below returns a violation when n of the tally's requests reach the share
// max.
func (t tally) below(c Check, max float64, n int64) error {
	if r := float64(n) / float64(t.total); n > 0 && r >= max {
		return fmt.Errorf("%s: measured %s (%d of %d)", c, format.Pct(r), n, t.total)
	}
	return nil
}

// describe lists the non-zero outcome counts: "12 timeout, 3 ok".
func (t tally) describe() string {
	if t.total == 0 {
		return "none at all"
	}
	var parts []string
	for o, n := range t.counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, Outcome(o)))
		}
	}
	return strings.Join(parts, ", ")
}

// noSuccess returns a violation when k has no successful answer.
func noSuccess(c Check, kind string, k *result.KindResult) error {
	if k != nil && k.Outcomes[OK] > 0 {
		return nil
	}
	t := tally{kind: kind}
	if k != nil {
		for o, n := range k.Outcomes {
			t.counts[o] += n
			t.total += n
		}
	}
	return fmt.Errorf("%s: no successful %s during the hold (%s)", c, kind, t.describe())
}

func validShare(c Check, v float64) error {
	switch {
	case math.IsNaN(v) || v < 0 || v > 1:
		return fmt.Errorf("check %q: bound %v is outside [0, 1]; write 0.005 for 0.5%%", c, v)
	case v == 1:
		// 1 written for 1% would pass unless every request failed.
		return fmt.Errorf("check %q: bound 1 is a share of 100%%, which only a step where every request fails breaches; write 0.01 for 1%%", c)
	}
	return nil
}

func validOutcomes(c Check, os ...Outcome) error {
	for _, o := range os {
		if int(o) >= result.NumOutcomes {
			return fmt.Errorf("check %q: unknown outcome %d", c, o)
		}
	}
	return nil
}

func knownKindOrAll(c Check, kind string, kinds []string) error {
	if kind == "" {
		return nil
	}
	return knownKind(c, kind, kinds)
}

func knownKind(c Check, kind string, kinds []string) error {
	if kind == AllRequests || slices.Contains(kinds, kind) {
		return nil
	}
	return fmt.Errorf("check %q: the workload never issues kind %q; it issues %s", c, kind, strings.Join(quoteAll(kinds), ", "))
}

func kindOrAll(kind string) string {
	if kind == "" {
		return "all requests"
	}
	return kind
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func formatPercentile(p float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", p), ".0") }

// Judge evaluates checks on a step measured elsewhere — such as a step
// merged from shards — and sets its Violations, Unjudged and Verdict: invalid
// when the generator check (Self.Reasons) or a check's data says so, fail
// when a check is violated, pass otherwise. An incomplete step stays so. An
// idle step (Level 0) is judged by its IdleChecks only.
func Judge(checks []Check, s *StepResult) {
	s.Violations, s.Unjudged, s.Down = nil, nil, false
	var down []string // a component that stopped: the cause, named first
	for _, c := range checks {
		if s.Idle() && !judgesIdle(c) {
			continue // it judges requests: an idle step has none
		}
		switch err := c.Evaluate(s); {
		case err == nil:
		case errors.Is(err, ErrInsufficientData):
			s.Unjudged = append(s.Unjudged, err.Error())
		case errors.Is(err, ErrSystemDown):
			down = append(down, err.Error())
			s.Down = true
		default:
			s.Violations = append(s.Violations, err.Error())
		}
	}
	judgeGrowth(s)
	s.Violations = append(down, s.Violations...)
	switch {
	case s.Verdict == result.Incomplete:
	case s.Down:
		s.Verdict = result.Fail // the harness's troubles after it are consequences
	case len(s.InvalidReasons()) > 0:
		s.Verdict = result.Invalid
	case len(s.Violations) > 0:
		s.Verdict = result.Fail
	default:
		s.Verdict = result.Pass
	}
}
