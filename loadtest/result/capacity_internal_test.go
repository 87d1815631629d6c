package result

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A headline claims only what was measured: a capacity is a number only
// where a higher level gave out; a ladder whose every step passed reports
// its top as a lower bound, saying why the figure stops there.
func TestCapacityTextClaimsOnlyWhatWasMeasured(t *testing.T) {
	ladder := func(verdicts ...Verdict) *Result {
		res := synthetic([]float64{200, 400, 800}[:len(verdicts)], []float64{1, 1, 1}, 0, 0, env)
		res.Model = "users"
		for i, v := range verdicts {
			res.Steps[i].Verdict = v
		}
		res.Decide()
		return res
	}
	for _, tc := range []struct {
		name  string
		res   *Result
		edit  func(*Result)
		want  string
		bound bool
	}{
		// Every step passed, every component idle: 800 is only the top.
		{name: "all passed", res: ladder(Pass, Pass, Pass),
			want: "≥ 800 users (the ladder's top; nothing near a limit)", bound: true},
		// The top step passed with the relay at its CPU limit: said.
		{name: "near a limit", res: ladder(Pass, Pass, Pass), edit: func(r *Result) {
			r.Steps[2].Saturated = []string{"relay cpu: mean 0.24 cores of 0.25 cores (96%)"}
		}, want: "≥ 800 users (the ladder's top; near a limit there: relay cpu: mean 0.24 cores of 0.25 cores (96%))", bound: true},
		// Something gave out: the capacity is a number.
		{name: "failed above", res: ladder(Pass, Pass, Fail), want: "400 users"},
		// The harness stopped the ladder: a bound, and why.
		{name: "invalid above", res: ladder(Pass, Invalid),
			want: "≥ 200 users (the generator or the harness reached its limit first, at 400)", bound: true},
		{name: "nothing held", res: ladder(Fail), want: "none (below 200 users, the lowest level probed)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.edit != nil {
				tc.edit(tc.res)
			}
			assert.Equal(t, tc.want, tc.res.CapacityText())
			assert.Equal(t, tc.bound, tc.res.CapacityLowerBound)
			assert.Contains(t, tc.res.Markdown(), "capacity **"+tc.want+"**")
		})
	}
	knee := &Result{Model: "arrivals", Plan: PlanInfo{Type: "knee"}, Steps: []*StepResult{{Step: Step{Level: 1000}, Verdict: Pass}}}
	knee.Decide()
	assert.Equal(t, "≥ 1,000 arrivals/s (the search's maximum; nothing near a limit)", knee.CapacityText())
}

// A breach that carries a component's last log lines keeps the steps'
// table one row a step: the cell, the verdict and the ceiling take its
// first line, the lines follow the table whole.
func TestMarkdownKeepsLogLinesOutOfTheTable(t *testing.T) {
	for _, plan := range []string{"ladder", "knee"} {
		res := synthetic([]float64{200, 400}, []float64{1, 1}, 0, 0, env)
		res.Model, res.Plan.Type = "users", plan
		res.Steps[1].Verdict, res.Steps[1].Down = Fail, true
		res.Steps[1].Violations = []string{"relay stopped unexpectedly at 10:36:41: killed by the kernel OOM killer\n" +
			`    {"level":"ERROR","msg":"token | lookup failed"}` + "\n    {\"level\":\"INFO\"}\n"}
		res.Decide()
		md := res.Markdown()
		assert.Contains(t, md, "| breach — relay stopped unexpectedly at 10:36:41: killed by the kernel OOM killer (its log below) |\n")
		assert.Contains(t, md, "**At 400**: relay stopped unexpectedly at 10:36:41: killed by the kernel OOM killer\n\n~~~\n"+
			`    {"level":"ERROR","msg":"token | lookup failed"}`+"\n    {\"level\":\"INFO\"}\n~~~\n")
		assert.NotContains(t, md, "-     {", "log lines are no verdict bullets")
		if plan == "knee" {
			assert.Contains(t, md, "The target gave out: at 400, relay stopped unexpectedly at 10:36:41: killed by the kernel OOM killer.\n")
		} else {
			assert.Contains(t, md, "- step 2 (level 400): relay stopped unexpectedly at 10:36:41: killed by the kernel OOM killer\n")
		}
	}
}
