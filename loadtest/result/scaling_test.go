package result_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// search is a knee search of users that held every level under knee and
// failed every level at or over it, probing levels.
func search(knee float64, levels ...float64) *result.Result {
	res := &result.Result{Model: "users", Plan: result.PlanInfo{Type: "knee"}}
	for i, l := range levels {
		v := result.Pass
		if knee > 0 && l >= knee {
			v = result.Fail
		}
		res.Steps = append(res.Steps, &result.StepResult{Index: i, Step: result.Step{Level: l}, Verdict: v})
	}
	res.Decide()
	return res
}

func TestScaling(t *testing.T) {
	// One replica holds 1,000 (fails 1,100); bracketed to 10%.
	one := search(1050, 800, 1000, 1100)
	cases := []struct {
		name    string
		runs    []*result.Result
		verdict []string
		fails   bool
	}{{
		name: "linear",
		// 2,000 held, 2,200 failed; 3,000 held, 3,300 failed.
		runs:    []*result.Result{one, search(2100, 1600, 2000, 2200), search(3100, 2400, 3000, 3300)},
		verdict: []string{result.ScalingBase, result.ScalingLinear, result.ScalingLinear},
	}, {
		name: "sublinear at three",
		// The third replica adds little: a shared database runs out.
		runs:    []*result.Result{one, search(2100, 1600, 2000, 2200), search(1500, 1200, 1400, 1550)},
		verdict: []string{result.ScalingBase, result.ScalingLinear, result.ScalingSublinear},
		fails:   true,
	}, {
		name:    "superlinear",
		runs:    []*result.Result{one, search(3100, 2400, 3000, 3300), search(3100, 2400, 3000, 3300)},
		verdict: []string{result.ScalingBase, result.ScalingSuperlinear, result.ScalingLinear},
	}, {
		name: "too coarse to tell",
		// Brackets of ×2: 2 replicas held 1,600 and failed 3,200.
		runs:    []*result.Result{search(1050, 500, 1000, 2000), search(2100, 800, 1600, 3200)},
		verdict: []string{result.ScalingBase, result.ScalingUnknown},
	}, {
		name:    "one replica never failed",
		runs:    []*result.Result{search(0, 500, 1000), search(0, 1000, 2000)},
		verdict: []string{result.ScalingBase, result.ScalingUnknown},
	}, {
		name:    "a lower bound that is surely linear",
		runs:    []*result.Result{one, search(0, 2000, 2100)},
		verdict: []string{result.ScalingBase, result.ScalingLinear},
	}, {
		name:    "nothing held",
		runs:    []*result.Result{one, search(100, 200, 400)},
		verdict: []string{result.ScalingBase, result.ScalingUnknown},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			counts := []int{1, 2, 3}[:len(c.runs)]
			s, err := result.NewScaling(counts, c.runs, 0)
			require.NoError(t, err)
			var got []string
			for _, p := range s.Points {
				got = append(got, p.Verdict)
			}
			assert.Equal(t, c.verdict, got, "%+v", s.Points)
			if c.fails {
				err := s.Err()
				require.Error(t, err)
				assert.True(t, errors.Is(err, result.ErrBreach))
				assert.Contains(t, err.Error(), "3 replicas")
			} else {
				assert.NoError(t, s.Err())
			}
			assert.Len(t, s.Rows(), len(c.runs))
			for _, r := range s.Rows() {
				assert.Len(t, r, len(s.Header()))
			}
		})
	}
}

func TestScalingFigures(t *testing.T) {
	s, err := result.NewScaling([]int{1, 2}, []*result.Result{search(1050, 800, 1000, 1100), search(2100, 1600, 2000, 2200)}, 0.8)
	require.NoError(t, err)
	p := s.Points[1]
	assert.InDelta(t, 2.0, p.Factor, 1e-9, "the middles of the brackets, 1,049 and 2,098")
	assert.InDelta(t, 2000.0/1100, p.Low, 1e-9)
	assert.InDelta(t, 2200.0/1000, p.High, 1e-9)
	assert.Equal(t, "users", s.Unit)
	assert.Equal(t, []string{"2", "2,000", "2,000 – 2,200", "1,000", "×2.00 (×1.82–×2.20)", "linear"}, s.Rows()[1])

	// A lower bound has a factor's low end only, over a base that is one
	// neither.
	s, err = result.NewScaling([]int{1, 2}, []*result.Result{search(1050, 800, 1000, 1100), search(0, 2000, 2100)}, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"2", "≥ 2,100", "≥ 2,100", "≥ 1,050", "≥ ×1.91", "linear"}, s.Rows()[1])
	s, err = result.NewScaling([]int{1, 2}, []*result.Result{search(0, 500, 1000), search(0, 1000, 2000)}, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "≥ 1,000", "≥ 1,000", "≥ 1,000", "×1 (the base)", "base"}, s.Rows()[0])
	assert.Equal(t, "–", s.Rows()[1][4])
	assert.Contains(t, s.Points[1].Text, "1 replica(s)' capacity is a lower bound")

	// At 95% of linear demanded, the same runs cannot be called linear.
	s, err = result.NewScaling([]int{1, 2}, []*result.Result{search(1050, 800, 1000, 1100), search(2100, 1600, 2000, 2200)}, 0.95)
	require.NoError(t, err)
	assert.Equal(t, result.ScalingUnknown, s.Points[1].Verdict)
}

func TestScalingRefuses(t *testing.T) {
	r := search(1050, 1000, 1100)
	for name, c := range map[string]struct {
		counts []int
		runs   []*result.Result
		eff    float64
	}{
		"one count":       {[]int{1}, []*result.Result{r}, 0},
		"runs mismatched": {[]int{1, 2}, []*result.Result{r}, 0},
		"not increasing":  {[]int{2, 1}, []*result.Result{r, r}, 0},
		"zero replicas":   {[]int{0, 1}, []*result.Result{r, r}, 0},
		"a missing run":   {[]int{1, 2}, []*result.Result{r, nil}, 0},
		"efficiency":      {[]int{1, 2}, []*result.Result{r, r}, 1.5},
	} {
		_, err := result.NewScaling(c.counts, c.runs, c.eff)
		assert.Error(t, err, name)
	}
}
