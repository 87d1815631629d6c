//go:build load

package scenarios

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// The seed scenarios' own checks, each failing for its reason and holding
// otherwise (no stack: the steps are written by hand).

// Every mission must end done within the step: one unfinished, or one
// failed, breaks it.
func TestCheckEveryMissionFinishes(t *testing.T) {
	c := (&orchRun{ids: []int64{1, 2, 3}}).allFinished()
	step := func(outcomes map[loadtest.Outcome]int64) *loadtest.StepResult {
		s := &loadtest.StepResult{}
		if outcomes != nil {
			s.Kinds = []*result.KindResult{{Kind: kindMissionDone, Outcomes: outcomes}}
		}
		return s
	}
	assert.NoError(t, c.Evaluate(step(map[loadtest.Outcome]int64{loadtest.OK: 3})))
	assert.EqualError(t, c.Evaluate(step(map[loadtest.Outcome]int64{loadtest.OK: 2})), "every mission finishes: 2 of 3 missions finished within the hold")
	assert.EqualError(t, c.Evaluate(step(map[loadtest.Outcome]int64{loadtest.OK: 2, loadtest.AppError: 1})), "every mission finishes: 2 of 3 missions finished within the hold",
		"a failed mission did not finish")
	assert.EqualError(t, c.Evaluate(step(nil)), "every mission finishes: 0 of 3 missions finished within the hold", "no board saw an end")
}

// The desk's web processes together must hold one stream per agent; a
// missing series names the knob that exports it.
func TestCheckDeskStreamsHeld(t *testing.T) {
	c := deskStreamsHeld([]string{"desk-1", "desk-2"})
	step := func(level float64, held ...float64) *loadtest.StepResult {
		s := &loadtest.StepResult{Step: loadtest.Step{Level: level}}
		for i, h := range held {
			s.Resources = append(s.Resources, result.SeriesSummary{Component: []string{"desk-1", "desk-2"}[i], Metric: "held_streams", Max: h})
		}
		return s
	}
	assert.NoError(t, c.Evaluate(step(3000, 1500, 1500)))
	assert.EqualError(t, c.Evaluate(step(3000, 1500, 1499)), "the desk holds one live stream per agent: the desk held at most 2999 live streams for 3000 agents")
	assert.EqualError(t, c.Evaluate(step(3000, 1500)), "the desk holds one live stream per agent: no desk-2/held_streams series: is DESK_METRICS on?")
	assert.EqualError(t, deskStreamsHeld(nil).Evaluate(step(3000, 1500, 1500)), "the desk holds one live stream per agent: no desk web process to count streams on")
}
