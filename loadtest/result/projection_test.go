package result_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// kneeRun is a knee search's result: a step per level, passing below
// fail; the relay's memory is 20 MiB + perUser a user, or memOf(level)
// when given, its CPU 0.05 cores + 0.0002 a user, under limits of 512 MiB
// and 1 core.
func kneeRun(perUser float64, memOf func(float64) float64, fail float64, levels ...float64) *result.Result {
	res := &result.Result{Plan: result.PlanInfo{Type: "knee"}}
	for i, l := range levels {
		v := result.Pass
		if fail > 0 && l >= fail {
			v = result.Fail
		}
		mem := 20*mib + perUser*l
		if memOf != nil {
			mem = memOf(l)
		}
		res.Steps = append(res.Steps, &result.StepResult{Index: i, Step: result.Step{Level: l}, Verdict: v,
			Resources: []result.SeriesSummary{
				{Component: "relay", Metric: "memory", Unit: "bytes", Max: mem, Limit: 512 * mib},
				{Component: "relay", Metric: "cpu", Unit: "cores", Mean: 0.05 + 0.0002*l, Limit: 1},
				{Component: "postgres", Metric: "memory", Unit: "bytes", Max: 100 * mib}, // no limit: not projected
			}})
	}
	res.Decide()
	return res
}

func TestProjection(t *testing.T) {
	t.Run("agrees", func(t *testing.T) {
		// 200 KiB a user: 512 MiB is met at (512−20)·1024/200 = 2,519 users;
		// the CPU's 1 core at 4,750. The knee: 2,250 holds, 2,531 breaks.
		res := kneeRun(200<<10, nil, 2531, 0, 1000, 1500, 2250, 2531)
		pr := res.Projection
		require.NotNil(t, pr)
		require.Len(t, pr.Resources, 2, "the relay's memory and CPU; postgres has no limit")
		assert.Equal(t, "relay memory", pr.Resources[0].Name(), "memory runs out first")
		assert.InDelta(t, 2519, pr.Resources[0].At, 1)
		assert.InDelta(t, 4750, pr.Resources[1].At, 1)
		assert.True(t, pr.Agrees, pr.Text)
		assert.Contains(t, pr.Text, "relay memory runs out first, at 2,519")
		assert.Contains(t, pr.Text, "the measured knee, 2,250–2,531, agrees")
		assert.Contains(t, res.Markdown(), "**Projection** (agrees with the knee)")
	})
	t.Run("knee before the projection", func(t *testing.T) {
		// The same costs, but the run broke at 1,125: something not linear
		// (a pool, a lock) gave out far before memory.
		res := kneeRun(200<<10, nil, 1125, 0, 500, 750, 1125)
		pr := res.Projection
		require.NotNil(t, pr)
		assert.False(t, pr.Agrees)
		assert.Contains(t, pr.Text, "yet the knee came at 750–1,125, before it")
		assert.Contains(t, res.Markdown(), "**disagrees with the knee**")
	})
	t.Run("runs out sooner than the line", func(t *testing.T) {
		// The memory the line projects to 2,519 is all held at 2,250
		// already (the heap's headroom): the same resource, non-linear.
		near := func(l float64) float64 {
			if l >= 2250 {
				return 512 * mib
			}
			return 20*mib + 200<<10*l
		}
		res := kneeRun(0, near, 2250, 0, 1000, 1500, 2250)
		pr := res.Projection
		require.NotNil(t, pr)
		assert.False(t, pr.Agrees)
		assert.Contains(t, pr.Text, "yet it ran out at 2,250 already (the knee: 1,500–2,250)")
	})
	t.Run("a cost per user that falls", func(t *testing.T) {
		// Memory that levels off as users share what is cached: a line
		// through the passing levels meets the limit before 3,000 users,
		// which held.
		saturating := func(l float64) float64 { return 20*mib + 480*mib*(1-math.Exp(-l/400)) }
		res := kneeRun(0, saturating, 4000, 0, 250, 500, 1000, 1500, 2000, 3000, 4000)
		pr := res.Projection
		require.NotNil(t, pr)
		assert.False(t, pr.Agrees, pr.Text)
		assert.Contains(t, pr.Text, "relay memory: the cost per unit of level falls with the load")
		assert.Contains(t, pr.Text, "the measured knee is 3,000–4,000")
	})
	t.Run("two points: a tolerance, not an interval", func(t *testing.T) {
		res := kneeRun(200<<10, nil, 2600, 1000, 2250, 2600)
		require.NotNil(t, res.Projection)
		assert.Equal(t, 2, res.Projection.Resources[0].Fit.N)
		assert.True(t, res.Projection.Agrees, res.Projection.Text)
		assert.Contains(t, res.Projection.Text, "a line through two steps: ±15%")
	})
	t.Run("nothing to project", func(t *testing.T) {
		assert.Nil(t, kneeRun(200<<10, nil, 500, 500).Projection, "one level")
		res := kneeRun(0, nil, 0, 100, 200)
		for _, p := range res.Projection.Resources {
			assert.NotEqual(t, "relay memory", p.Name(), "a flat memory does not run out")
		}
	})
	assert.False(t, math.IsNaN(kneeRun(200<<10, nil, 0, 100, 200, 300).Projection.Resources[0].AtHigh))
}

// TestProjectionEncodes: a projection through two steps, and one whose
// interval reaches zero, write as JSON (which has no infinity) and read
// back.
func TestProjectionEncodes(t *testing.T) {
	res := kneeRun(200<<10, nil, 2600, 1000, 2250, 2600)
	// Memory that barely grows and scatters: the slope's interval reaches
	// zero, and the projection's upper bound is unbounded.
	scatter := map[float64]float64{100: 0, 200: 3 * mib, 300: 1 * mib, 400: 4 * mib}
	flat := kneeRun(0, func(l float64) float64 { return 20*mib + scatter[l] }, 0, 100, 200, 300, 400)
	require.NotNil(t, flat.Projection)
	var mem result.ResourceProjection
	for _, p := range flat.Projection.Resources {
		if p.Metric == "memory" {
			mem = p
		}
	}
	assert.Zero(t, mem.AtHigh, "unbounded, as 0: %s", mem)
	assert.Contains(t, mem.String(), "–∞)")
	for _, r := range []*result.Result{res, flat} {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		var back result.Result
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, r.Projection, back.Projection)
	}
}
