package loadtest_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// downCheck is a check that saw a component of the system stop.
type downCheck struct{ err error }

func (c downCheck) String() string                      { return "no component stopped" }
func (c downCheck) Validate([]string) error             { return nil }
func (c downCheck) Evaluate(*loadtest.StepResult) error { return c.err }

// A target that died during the hold failed, whatever the harness saw
// after: the proxy of its container exiting, its users retrying, the
// generator late under their retries. Those stay on record but void
// nothing; without the death they would.
func TestTargetDownIsABreachNotInvalid(t *testing.T) {
	harness := []string{"harness fault: Docker's userland proxy of relay's published port exited",
		"the generator started requests late: schedule lag p99 190ms > 50ms (1213 started later than that)"}
	oom := fmt.Errorf("%w: relay stopped unexpectedly: killed by the kernel OOM killer", loadtest.ErrSystemDown)
	for _, tc := range []struct {
		name    string
		err     error
		verdict result.Verdict
	}{
		// Killed by the OOM killer mid-hold: a breach.
		{"died", oom, result.Fail},
		// A plain breach beside harness faults: the harness voids it.
		{"breached", errors.New("p95 of call < 15s: measured 20s"), result.Invalid},
		// Nothing violated, the harness faulted: invalid.
		{"healthy", nil, result.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &loadtest.StepResult{Step: loadtest.Step{Level: 4000}, Self: result.SelfCheckResult{Reasons: harness}}
			loadtest.Judge([]loadtest.Check{downCheck{tc.err}}, s)
			assert.Equal(t, tc.verdict, s.Verdict)
			assert.Equal(t, tc.verdict == result.Fail, s.Down)
			assert.Equal(t, harness, s.Self.Reasons, "kept on record")
			res := &loadtest.Result{Plan: result.PlanInfo{Type: "ladder"}, Steps: []*loadtest.StepResult{s}}
			res.Decide()
			err := res.Err()
			assert.Equal(t, tc.verdict == result.Invalid, errors.Is(err, loadtest.ErrInvalid), "%v", err)
			assert.Equal(t, tc.verdict == result.Fail, errors.Is(err, loadtest.ErrBreach), "%v", err)
		})
	}
}

// A step in which the target died names its death first — before the
// breaches it caused, whatever the order of the checks — and the ceiling
// is the target giving out, not "the SLO, with no resource near its limit"
// (a dead container's resources are not sampled: make load's 2,813-user
// probe, OOM-killed, read so).
func TestTargetDownIsTheCeiling(t *testing.T) {
	oom := fmt.Errorf("%w: relay stopped unexpectedly: killed by the kernel OOM killer", loadtest.ErrSystemDown)
	pass := &loadtest.StepResult{Step: loadtest.Step{Level: 2532}}
	loadtest.Judge(nil, pass)
	died := &loadtest.StepResult{Index: 1, Step: loadtest.Step{Level: 2813}}
	loadtest.Judge([]loadtest.Check{downCheck{errors.New("failures of call < 0.5%: no successful call")}, downCheck{oom}}, died)
	assert.Equal(t, result.Fail, died.Verdict)
	assert.Equal(t, oom.Error(), died.Violations[0])
	res := &loadtest.Result{Plan: result.PlanInfo{Type: "ladder"}, Steps: []*loadtest.StepResult{pass, died}}
	res.Decide()
	assert.Equal(t, "The target gave out: at 2,813, "+oom.Error()+".", res.Ceiling())
	assert.Contains(t, res.Markdown(), "breach — "+oom.Error())
}
