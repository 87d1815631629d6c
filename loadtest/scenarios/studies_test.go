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
