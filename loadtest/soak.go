package loadtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// Soak returns a plan that ramps to level and holds it for hold — hours in
// a nightly, minutes in a -short run — fitting every component's memory and
// every goroutines series (a target's Prometheus metrics: prom.GoRuntime)
// over the hold, and failing on a leak it is sure of in the target or a
// service of the system (see result.Growth for the fit and the three tests
// a leak must pass). The database's growth is reported, not judged: its
// memory grows with its data and its cache by design.
//
// The hold needs at least MinSoakSamples sampling intervals
// (Scenario.SampleEvery); a soak of minutes wants a sample a second, and
// a rate below which memory growth is no leak (Steps[0].LeakMatters): in
// minutes a heap still finding its size grows like a slow leak.
func Soak(level float64, ramp, hold time.Duration) Ladder {
	return Ladder{Steps: []Step{{Level: level, Ramp: ramp, Hold: hold, Soak: true}}}
}

// MinSoakSamples is the fewest samples a soak's hold takes: its last two
// thirds must hold result.MinGrowthWindows windows of two samples.
const MinSoakSamples = 3 * result.MinGrowthWindows

// validateSoak reports a soak step too short for its sampling interval.
func validateSoak(p Plan, every time.Duration) error {
	l, ok := p.(Ladder)
	if !ok {
		if lp, isPtr := p.(*Ladder); isPtr && lp != nil {
			l, ok = *lp, true
		}
	}
	if !ok {
		return nil
	}
	if every == 0 {
		every = 5 * time.Second
	}
	var errs []string
	for i, s := range l.Steps {
		if s.Soak && s.Hold < MinSoakSamples*every {
			errs = append(errs, fmt.Sprintf("plan: Steps[%d] is a soak of %v, too short to fit growth at a sample every %v; hold it at least %v, or sample more often (Scenario.SampleEvery = %v)",
				i, s.Hold, every, MinSoakSamples*every, max(s.Hold/MinSoakSamples, 100*time.Millisecond).Round(100*time.Millisecond)))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s", strings.Join(errs, "; "))
}

// growth fits a soak step's series over its hold [start, end]: every
// component's memory but the generator's and the harness's, and every
// goroutines series. Judged are the system's targets and services (their
// replicas too); with no components described, every series fitted.
func (r *runner) growth(step Step, start, end time.Time) (out []result.Growth, unfitted []string) {
	type key struct{ component, metric string }
	type series struct {
		unit  string
		limit float64
		t, v  []float64
	}
	all := map[key]*series{}
	var order []key
	for _, p := range r.samples.all() {
		m := p.m
		if p.at.Before(start) || p.at.After(end) || m.Harness || m.Component == "generator" ||
			(m.Metric != "memory" && m.Metric != "goroutines") {
			continue
		}
		k := key{m.Component, m.Metric}
		s := all[k]
		if s == nil {
			s = &series{unit: m.Unit}
			all[k] = s
			order = append(order, k)
		}
		s.limit = max(s.limit, m.Limit)
		s.t, s.v = append(s.t, p.at.Sub(start).Seconds()), append(s.v, m.Value)
	}
	hold := end.Sub(start).Seconds()
	for _, k := range order {
		s := all[k]
		g, ok := result.NewGrowth(k.component, k.metric, s.unit, s.limit, s.t, s.v, hold)
		if !ok {
			unfitted = append(unfitted, k.component+" "+k.metric)
			continue
		}
		g = g.MattersAt(step.LeakMatters)
		g.Judged = r.judgesGrowthOf(k.component)
		out = append(out, g)
	}
	return out, unfitted
}

// judgesGrowthOf reports whether a leak of component fails a soak: it is
// the target or a service of the system (or a replica of one, "relay-2"),
// or the system lists no components.
func (r *runner) judgesGrowthOf(component string) bool {
	comps := r.s.System.Components
	if len(comps) == 0 {
		return true
	}
	judged := func(c result.Component) bool { return c.Role == result.RoleTarget || c.Role == result.RoleService }
	return slices.ContainsFunc(comps, func(c result.Component) bool {
		if c.Name != component && !isReplicaOf(component, c.Name) {
			return false
		}
		return judged(c)
	})
}

// isReplicaOf reports whether name is a replica of base: "relay-2" of
// "relay".
func isReplicaOf(name, base string) bool {
	rest, ok := strings.CutPrefix(name, base+"-")
	if !ok || rest == "" {
		return false
	}
	return strings.Trim(rest, "0123456789") == ""
}

// judgeGrowth adds a soak step's judged leaks to its violations, and the
// series it could not fit to what left it unjudged.
func judgeGrowth(s *StepResult) {
	if !s.Step.Soak {
		return
	}
	for _, g := range s.Growth {
		if g.Leak && g.Judged {
			s.Violations = append(s.Violations, "no leak over the soak: "+g.String())
		}
	}
}
