package loadtest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Check is one service-level objective evaluated on every step. A check
// returns an error describing each violation; the run collects them all and
// the test decides what to do with them.
type Check interface {
	// Evaluate returns a non-nil error when the step violates the check.
	Evaluate(s *StepResult) error
	// Validate reports a malformed check, given the kinds the workload
	// issues, before anything runs.
	Validate(kinds []string) error
	// String describes the check ("p95 of tools/call < 15s").
	String() string
}

// LatencyBelow checks that the latency of kind at percentile p (0 < p <= 100)
// stays below bound: LatencyBelow("tools/call", 95, 15*time.Second). A step
// with no answered request of the kind violates it: there is nothing to
// vouch for.
func LatencyBelow(kind string, p float64, bound time.Duration) Check {
	return latencyCheck{kind: kind, p: p, bound: bound}
}

type latencyCheck struct {
	kind  string
	p     float64
	bound time.Duration
}

func (c latencyCheck) String() string {
	return fmt.Sprintf("p%s of %s < %v", formatPercentile(c.p), c.kind, c.bound)
}

func (c latencyCheck) Validate(kinds []string) error {
	var errs []error
	if !(c.p > 0 && c.p <= 100) {
		errs = append(errs, fmt.Errorf("check %q: percentile %v is outside (0, 100]; write 95 for p95", c, c.p))
	}
	if c.bound <= 0 {
		errs = append(errs, fmt.Errorf("check %q: bound %v must be positive", c, c.bound))
	}
	errs = append(errs, knownKind(c, c.kind, kinds))
	return errors.Join(errs...)
}

func (c latencyCheck) Evaluate(s *StepResult) error {
	k := s.Kind(c.kind)
	if k == nil || k.Answered() == 0 {
		return fmt.Errorf("%s: no answered %s request during the hold; lengthen the hold or raise the level", c, c.kind)
	}
	if got := k.Percentile(c.p); got >= c.bound {
		return fmt.Errorf("%s: measured %v", c, got.Round(time.Microsecond))
	}
	return nil
}

// RateBelow checks that the fraction of kind's requests ending in outcome o
// stays below max (0.005 for 0.5%). The denominator is every request of the
// kind, dropped ones included. An empty kind checks all kinds together.
func RateBelow(kind string, o Outcome, max float64) Check {
	return rateCheck{kind: kind, o: o, max: max}
}

type rateCheck struct {
	kind string
	o    Outcome
	max  float64
}

func (c rateCheck) String() string {
	k := c.kind
	if k == "" {
		k = "all kinds"
	}
	return fmt.Sprintf("%s rate of %s < %s", c.o, k, formatPct(c.max))
}

func (c rateCheck) Validate(kinds []string) error {
	var errs []error
	if math.IsNaN(c.max) || c.max < 0 || c.max > 1 {
		errs = append(errs, fmt.Errorf("check %q: bound %v is outside [0, 1]; write 0.005 for 0.5%%", c, c.max))
	}
	if int(c.o) >= NumOutcomes {
		errs = append(errs, fmt.Errorf("check %q: unknown outcome %d", c, c.o))
	}
	if c.kind != "" {
		errs = append(errs, knownKind(c, c.kind, kinds))
	}
	return errors.Join(errs...)
}

func (c rateCheck) Evaluate(s *StepResult) error {
	var n, total int64
	for _, k := range s.Kinds {
		if c.kind == "" || k.Kind == c.kind {
			n += k.Outcomes[c.o]
			total += k.Total()
		}
	}
	if total == 0 {
		return nil
	}
	if r := float64(n) / float64(total); r >= c.max && n > 0 {
		return fmt.Errorf("%s: measured %s (%d of %d)", c, formatPct(r), n, total)
	}
	return nil
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

func knownKind(c Check, kind string, kinds []string) error {
	if slices.Contains(kinds, kind) {
		return nil
	}
	return fmt.Errorf("check %q: the workload never issues kind %q; it issues %s", c, kind, strings.Join(quoteAll(kinds), ", "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func formatPercentile(p float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", p), ".0") }

func formatPct(f float64) string { return fmt.Sprintf("%.3g%%", f*100) }
