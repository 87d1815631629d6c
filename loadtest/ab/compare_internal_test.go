package ab

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// fig is a primary figure judged from samples a and b, lower is better,
// 5% band.
func fig(name string, a, b []float64) FigureResult {
	f := FigureResult{Figure: Figure{Name: name, Unit: "µs", Primary: true}, A: a, B: b, PHolm: math.NaN()}
	f.Comparison = Compare(a, b, f.Rule)
	f.Answer = f.Comparison.Answer
	return f
}

func TestDecide(t *testing.T) {
	flat := []float64{100, 101, 99, 102, 98}
	double := []float64{200, 202, 198, 204, 196}
	noisy := []float64{90, 125, 100, 110, 95}
	throughput := func(a, b []float64) FigureResult {
		f := fig("throughput", a, b)
		f.Direction = HigherIsBetter
		return f
	}
	// A figure with an absolute band of 1 ms: +45% of 0.18 ms is within it.
	tiny := func(a, b []float64) FigureResult {
		f := FigureResult{Figure: Figure{Name: "p95 sse_delivery", Unit: "ms", Primary: true, Rule: Rule{Absolute: 1}}, A: a, B: b, PHolm: math.NaN()}
		f.Comparison = Compare(a, b, f.Rule)
		f.Answer = f.Comparison.Answer
		return f
	}
	small := []float64{0.18, 0.17, 0.19, 0.18, 0.17}
	smallUp := []float64{0.26, 0.25, 0.27, 0.26, 0.24}
	unjudged := fig("p99 rare", flat, double)
	unjudged.Primary, unjudged.Unjudged, unjudged.Answer = false, "10 samples in the sparsest trial, 1000 needed", Unjudged
	others := func(fs ...FigureResult) []FigureResult {
		for i := range 6 {
			fs = append(fs, fig(string(rune('a'+i)), flat, flat))
		}
		return fs
	}
	for _, tc := range []struct {
		name    string
		trials  int
		figs    []FigureResult
		want    Verdict
		reason  string // a substring of the reason
		missed  string // MissedUpTo's figure, "" for none
		holmOf0 float64
	}{
		// One figure doubled in 5 trials per arm: p = 0.0079 < 0.05 with nothing to correct for.
		{"one figure", 5, []FigureResult{fig("cpu/ok relay", flat, double)},
			Regressed, "worse in B: cpu/ok relay 100 → 200 µs (×2, 95% CI ×1.94–×2.06, p=0.0079, Holm p=0.0079)", "", 0.0079},
		// The same among 7 figures: 7 × 0.0079 = 0.056, clearly worse but not carried.
		{"among seven", 5, others(fig("cpu/ok relay", flat, double)),
			Undecided, "possibly worse in B, not shown with these trials: cpu/ok relay", "", 0.056},
		// Pointing no way (p = 1), but noisy: unchanged, and it could be +25%.
		{"noise", 5, []FigureResult{fig("p99 get", flat, noisy)},
			Unchanged, "no primary figure moved by what matters — could not rule out up to +25% p99 get (×0.9–×1.25)", "p99 get", 1},
		// Throughput's worse side is its low end.
		{"throughput", 5, []FigureResult{throughput(flat, noisy), fig("cpu/ok relay", flat, flat)},
			Unchanged, "could not rule out up to -10% throughput (×0.9–×1.25)", "throughput", 1},
		// Halved cost: better, and what it could have missed is said too.
		{"better", 5, []FigureResult{fig("cpu/ok relay", double, flat), fig("p99 get", flat, noisy)},
			Improved, "better in B: cpu/ok relay 200 → 100 µs", "p99 get", 0.016},
		// Unjudged figures decide nothing, even a doubled one.
		{"unjudged", 5, []FigureResult{fig("cpu/ok relay", flat, flat), unjudged},
			Unchanged, "no primary figure moved", "cpu/ok relay", 1},
		// A figure the same within its absolute band is not what could be
		// missed, however far its ratio reaches: the open figure is.
		{"absolute band", 5, []FigureResult{tiny(small, smallUp), fig("p99 get", flat, noisy)},
			Unchanged, "could not rule out up to +25% p99 get", "p99 get", 0.016},
		// With every figure the same, the widest still says how fine
		// the comparison was.
		{"all the same", 5, []FigureResult{tiny(small, smallUp), fig("cpu/ok relay", flat, flat)},
			Unchanged, "could not rule out up to +53% p95 sse_delivery", "p95 sse_delivery", 0.016},
		// Nothing judged: no verdict.
		{"nothing judged", 5, []FigureResult{unjudged},
			Undecided, "no primary figure could be judged", "", math.NaN()},
		// One valid trial: no verdict.
		{"one trial", 1, []FigureResult{fig("cpu/ok relay", flat[:1], double[:1])},
			Undecided, "too few valid trials (A 1, B 1)", "", 1},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			r := &Report{Trials: [2]int{tc.trials, tc.trials}, Figures: tc.figs}
			r.correct()
			var reason string
			r.Verdict, reason = r.decide()
			assert.Equal(t, tc.want, r.Verdict, reason)
			assert.Contains(t, reason, tc.reason)
			if tc.missed == "" {
				assert.Nil(t, r.MissedUpTo)
			} else if assert.NotNil(t, r.MissedUpTo) {
				assert.Equal(t, tc.missed, r.MissedUpTo.Figure)
			}
			if math.IsNaN(tc.holmOf0) {
				assert.True(t, math.IsNaN(r.Figures[0].PHolm))
			} else {
				assert.InDelta(t, tc.holmOf0, r.Figures[0].PHolm, 0.01)
			}
		})
	}
}
