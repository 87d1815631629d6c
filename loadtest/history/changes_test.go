package history_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/history"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// nights makes n nightly rows of TestLoad_Smoke, one commit a night, with
// figures from figure(night, name) (noise added by the caller).
func nights(n int, figure func(night int) (cpu, mem, p95 float64), harness ...func(night int) float64) []history.Row {
	var rows []history.Row
	for i := range n {
		date := time.Date(2026, 11, 1, 2, 17, 0, 0, time.UTC).AddDate(0, 0, i).Format("2006-01-02 15:04")
		cpu, mem, p95 := figure(i)
		rows = append(rows, row(date, fmt.Sprintf("%c%039d", 'a'+i, 0), 9700, func(r *history.Row) {
			r.Figures = []history.Figure{
				{Name: "throughput", Unit: "req/s", Value: 1000, HigherIsBetter: true},
				{Name: "p95 tools/call", Unit: "ms", Value: p95},
				{Name: "cpu/ok relay", Unit: "µs", Value: cpu},
				{Name: "memory relay", Unit: "MiB", Value: mem},
				{Name: "failures", Unit: "%", Value: 0.01 * float64(1+i%3)}, // tiny and tripling: under the floor
			}
			for _, h := range harness {
				r.Figures = append(r.Figures, history.Figure{Name: "cpu/ok generator", Unit: "µs", Value: h(i), Harness: true})
			}
		}))
	}
	return rows
}

// TestChangesFindStepsAndDrifts plants, over 20 nights with noise like a
// shared machine's, a ×1.4 step in cpu/ok relay at night 12 and a 3% a
// night growth of memory relay: the step must be found between nights 11
// and 12 (their commits named), the growth as a drift with its slope, and
// nothing in the flat figures. A ×1.3 step of the generator's own CPU at
// night 5 is told as the harness's, not bisected.
func TestChangesFindStepsAndDrifts(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	noise := func(sigma float64) float64 { return math.Exp(rng.NormFloat64() * sigma) }
	rows := nights(20, func(i int) (float64, float64, float64) {
		cpu := 200.0
		if i >= 12 {
			cpu *= 1.4
		}
		return cpu * noise(0.03), 40 * math.Pow(1.03, float64(i)) * noise(0.01), 1200 * noise(0.08)
	}, func(i int) float64 {
		if i >= 5 {
			return 260 * noise(0.03)
		}
		return 200 * noise(0.03)
	})
	found, err := history.Changes(rows, "", history.ChangeOptions{})
	require.NoError(t, err)
	var step, drift, harness int
	for _, f := range found {
		t.Log(f)
		assert.Equal(t, f.Figure == "cpu/ok generator", f.Harness, "%s", f)
		switch f.Figure {
		case "cpu/ok generator":
			harness++
			assert.True(t, f.Step && f.Worse, "%s", f)
			assert.Equal(t, rows[5].Commit, f.After.Commit)
			assert.Contains(t, f.String(), "worse; the harness's own cost, which moves with the machine: not bisected")
		case "cpu/ok relay":
			require.True(t, f.Step, "%s", f)
			step++
			assert.Equal(t, rows[11].Commit, f.Before.Commit)
			assert.Equal(t, rows[12].Commit, f.After.Commit)
			assert.InDelta(t, 1.4, f.Ratio, 0.1)
			assert.True(t, f.Worse)
			assert.Contains(t, f.String(), "cpu/ok relay stepped ×1.4")
			assert.Contains(t, f.String(), "between the nights of commits `l000000` (2026-11-12) and `m000000` (2026-11-13)")
		case "memory relay":
			require.False(t, f.Step, "a steady growth is a drift, not a step: %s", f)
			drift++
			assert.InDelta(t, 0.03, f.PerNight, 0.01)
			assert.True(t, f.Worse)
			assert.Contains(t, f.String(), "memory relay drifts +3")
		default:
			t.Errorf("a change in a flat figure: %s", f)
		}
	}
	assert.Equal(t, 1, step, "one step in cpu/ok relay")
	assert.Equal(t, 1, drift, "one drift in memory relay")
	assert.Equal(t, 1, harness, "one step in the generator's CPU")
}

// TestChangesKeepToComparableStretches: a new environment class at night
// 10 doubles throughput and halves the cost, which is no change of the
// code's: the two stretches are searched apart and nothing is found. So
// is a stretch too short to search, and an invalid night is left out.
func TestChangesKeepToComparableStretches(t *testing.T) {
	rows := nights(20, func(i int) (float64, float64, float64) { return 200 + float64(i%2), 40, 1200 })
	for i := 10; i < 20; i++ {
		rows[i].Class = classB
		for j := range rows[i].Figures {
			if rows[i].Figures[j].Name == "cpu/ok relay" {
				rows[i].Figures[j].Value /= 2
			}
		}
	}
	rows[5].Verdict = result.Invalid
	for j := range rows[5].Figures {
		rows[5].Figures[j].Value *= 10 // the generator gave out: not the code's figure
	}
	found, err := history.Changes(rows, "", history.ChangeOptions{})
	require.NoError(t, err)
	assert.Empty(t, found)

	// The same halving within one class is a step for the better.
	for i := 10; i < 20; i++ {
		rows[i].Class = classA
	}
	found, err = history.Changes(rows, "TestLoad_Smoke", history.ChangeOptions{})
	require.NoError(t, err)
	require.Len(t, found, 1)
	assert.True(t, found[0].Step)
	assert.False(t, found[0].Worse, "a lower cost is better")
	assert.Equal(t, rows[9].Commit, found[0].Before.Commit)

	// Five nights are too few to search (MinNights 6).
	found, err = history.Changes(rows[8:13], "", history.ChangeOptions{})
	require.NoError(t, err)
	assert.Empty(t, found)
}
