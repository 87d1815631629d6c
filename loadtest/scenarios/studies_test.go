//go:build load

package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestForwardReading checks the forward study's reading both ways: the
// seed's shape passes, and each way it can be missing is named.
func TestForwardReading(t *testing.T) {
	slow := 50 * time.Millisecond
	good := func() map[string]cellFigures {
		return map[string]cellFigures{
			"upstream=fast/mode=sync":            {Achieved: 200, Mean: 2 * time.Millisecond, Sent: 1000, Completed: 1000},
			"upstream=fast/mode=async":           {Achieved: 200, Mean: 2 * time.Millisecond, Sent: 1000, Completed: 1000},
			"upstream=slow/mode=sync":            {Achieved: 40, Mean: 2500 * time.Millisecond, Sent: 1000, Completed: 200},
			"upstream=slow/mode=async":           {Achieved: 200, Mean: 55 * time.Millisecond, Sent: 1000, Completed: 1000},
			"upstream=slow/mode=sync/cache=hit":  {Achieved: 200, Mean: time.Millisecond, Sent: 1000, Completed: 1000},
			"upstream=slow/mode=sync/workers=x4": {Achieved: 160, Mean: 900 * time.Millisecond, Sent: 1000, Completed: 800},
		}
	}
	assert.Empty(t, forwardReading(good(), slow), "the seed's shape")
	assert.Empty(t, forwardReading(map[string]cellFigures{"upstream=slow/mode=async": good()["upstream=slow/mode=async"]}, slow),
		"a cell alone (-run) is judged on its own bars only")

	tests := []struct {
		name   string
		change func(map[string]cellFigures)
		want   string
	}{
		// Sync keeps up with async: the offer was not above what it absorbs.
		{"no_gap", func(f map[string]cellFigures) { f["upstream=slow/mode=sync"] = f["upstream=slow/mode=async"] }, "not twice sync's"},
		// Async queues: it does not answer near the upstream's delay.
		{"async_slow", func(f map[string]cellFigures) {
			c := f["upstream=slow/mode=async"]
			c.Mean = time.Second
			f["upstream=slow/mode=async"] = c
		}, "near the upstream's delay"},
		// The fast cell lost calls: the harness saturated.
		{"harness", func(f map[string]cellFigures) {
			c := f["upstream=fast/mode=async"]
			c.Completed = 990
			f["upstream=fast/mode=async"] = c
		}, "not clear of saturation"},
		// More workers did not help.
		{"topology", func(f map[string]cellFigures) {
			f["upstream=slow/mode=sync/workers=x4"] = f["upstream=slow/mode=sync"]
		}, "four times the workers"},
		// Listings waited for the upstream: no cache.
		{"cache", func(f map[string]cellFigures) {
			c := f["upstream=slow/mode=sync/cache=hit"]
			c.Mean = 60 * time.Millisecond
			f["upstream=slow/mode=sync/cache=hit"] = c
		}, "not answered from the cache"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := good()
			tc.change(f)
			p := forwardReading(f, slow)
			if assert.NotEmpty(t, p) {
				assert.Contains(t, p[0]+" "+p[len(p)-1], tc.want)
			}
		})
	}
}

// TestDrainVerdict checks the drain bars both ways: a clean graceful
// drain passes; a graceful policy that cancels accepted calls, a relay
// that records more completions than its clients got, a drain that never
// ended and a cell with nothing in flight each fail, for their reason; a
// non-graceful policy may cancel.
func TestDrainVerdict(t *testing.T) {
	clean := drainFigures{Policy: "complete", Graceful: true, Drained: true, Inflight: 5,
		Sent: [numPhases]int64{300, 10, 100}, Completed: [numPhases]int64{300}, Failed: [numPhases]int64{0, 10, 100}, Recorded: 300}
	assert.Empty(t, drainVerdict(clean))

	minimal := clean
	minimal.Policy, minimal.Graceful, minimal.Abandoned, minimal.Cancelled = "minimal", false, 5, 5
	minimal.Completed[0], minimal.Recorded = 295, 295
	assert.Empty(t, drainVerdict(minimal), "a policy that does not claim to be graceful may cancel accepted calls")

	tests := []struct {
		name   string
		change func(*drainFigures)
		want   string
	}{
		{"graceful_cancels", func(d *drainFigures) { d.Abandoned, d.Cancelled = 3, 3; d.Completed[0], d.Recorded = 297, 297 }, "graceful but lost accepted calls: 3 cancelled"},
		{"answer_lost", func(d *drainFigures) { d.Recorded = 301 }, "recorded 301 calls as completed, its clients got 300"},
		{"never_drained", func(d *drainFigures) { d.Drained = false }, "never logged the end of its drain"},
		{"nothing_in_flight", func(d *drainFigures) { d.Inflight = 0 }, "no call was in flight"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := clean
			tc.change(&d)
			p := drainVerdict(d)
			if assert.Len(t, p, 1) {
				assert.Contains(t, p[0], tc.want)
			}
		})
	}
}

// TestFeatureTaxReading checks the feature-tax study's bar both ways: a
// planted tax called different passes, one called same fails, and so does
// a posture with too few valid trials.
func TestFeatureTaxReading(t *testing.T) {
	seen := map[string]taxVerdict{"planted_cpu": {Trials: [2]int{5, 5}, CPUWorse: true}, "metrics_on": {Trials: [2]int{5, 5}}}
	assert.Empty(t, featureTaxReading(seen))

	missed := map[string]taxVerdict{"planted_cpu": {Trials: [2]int{5, 5}, CPU: "same", P95: "same"}}
	p := featureTaxReading(missed)
	if assert.Len(t, p, 1) {
		assert.Contains(t, p[0], "cannot tell a tax")
	}
	few := map[string]taxVerdict{"trace_full": {Trials: [2]int{5, 1}}}
	p = featureTaxReading(few)
	if assert.Len(t, p, 1) {
		assert.Contains(t, p[0], "too few")
	}
}
