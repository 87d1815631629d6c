package loadtest_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// TestTimelineInVirtualTime runs two steps whose target slows down from
// 5 ms to 50 ms in the middle of the second hold, and reads in the timeline
// when it did: per-window rates that follow the steps, the latency rise in
// the windows after it, an observed kind kept apart from the request rates,
// the phases in order, and everything aligned and kept through the file.
func TestTimelineInVirtualTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := loadtest.NewRecorder("fanout")
		start := time.Now()
		slowFrom := start.Add(9 * time.Second) // inside step 2's hold (6 s to 12 s)
		do := func(ctx context.Context) loadtest.Response {
			d := 5 * time.Millisecond
			if !time.Now().Before(slowFrom) {
				d = 50 * time.Millisecond
			}
			rec.Record("fanout", 2*time.Millisecond, loadtest.Response{Outcome: loadtest.OK})
			return sleeper(d)(ctx)
		}
		var mu sync.Mutex
		var lines []string
		res := run(t, loadtest.Scenario{
			Recorder: rec,
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: do}}},
			Plan: loadtest.Ladder{Steps: []loadtest.Step{
				{Level: 100, Ramp: time.Second, Hold: 4 * time.Second},
				{Level: 200, Ramp: time.Second, Hold: 6 * time.Second},
			}},
			Logf: func(f string, a ...any) { mu.Lock(); lines = append(lines, fmt.Sprintf(f, a...)); mu.Unlock() },
		})
		tl := res.Timeline
		require.NotNil(t, tl)
		assert.Equal(t, time.Second, tl.Every)

		var names []string
		for _, p := range tl.Phases {
			names = append(names, p.String())
		}
		assert.Equal(t, []string{"step 1 ramp to 100", "step 1 hold at 100", "step 1 drain",
			"step 2 ramp to 200", "step 2 hold at 200", "step 2 drain"}, names)
		assert.InDelta(t, 4, tl.Phases[1].To-tl.Phases[1].From, 0.01)
		assert.InDelta(t, 6, tl.Phases[4].To-tl.Phases[4].From, 0.01)

		n := tl.Len()
		require.GreaterOrEqual(t, n, 12)
		get, fan := tl.Kind("get"), tl.Kind("fanout")
		require.NotNil(t, get)
		require.NotNil(t, fan)
		assert.False(t, get.Observed)
		assert.True(t, fan.Observed, "fan-out samples are observed, not requests")
		for _, s := range [][]int64{get.Count, get.Errors, get.P50, get.P95, get.P99, fan.Count, tl.Errors, tl.Dropped, tl.InFlight} {
			assert.Len(t, s, n)
		}
		assert.Len(t, tl.Offered, n)
		assert.Len(t, tl.Answered, n)

		for i, at := range tl.T {
			p, ok := tl.PhaseAt(at - 0.5) // the window's middle
			if !ok || p.Name != "hold" {
				continue
			}
			// Requests only: the fan-out samples (one per request) do not
			// double the rate.
			assert.InDelta(t, p.Level, tl.Offered[i], 2, "window ending at %gs", at)
			assert.InDelta(t, p.Level, tl.Answered[i], 0.1*p.Level, "window ending at %gs", at)
			want := 5 * time.Millisecond
			if at-1 >= slowFrom.Sub(start).Seconds()-0.01 {
				want = 50 * time.Millisecond
			}
			assert.Equal(t, want, (time.Duration(get.P50[i]) * time.Microsecond).Round(time.Millisecond), "get p50 in the window ending at %gs", at)
			assert.Equal(t, int64(0), get.Errors[i])
			assert.Positive(t, fan.Count[i])
		}
		g := tl.Resource("generator", "memory")
		require.NotNil(t, g, "sampled series are kept")
		assert.Equal(t, len(g.T), len(g.V))

		// The progress lines say which phases they cover, count requests
		// only and report the observed kind apart.
		mu.Lock()
		defer mu.Unlock()
		joined := strings.Join(lines, "\n")
		assert.Contains(t, joined, "step 1 ramp to 100 → step 1 hold at 100 [5s]: ")
		// 50/s on average over the 1 s ramp, 100/s over 4 s of hold: 90/s
		// (180/s if the fan-out samples counted as requests).
		assert.Contains(t, joined, "[5s]: 90.0/s offered")
		assert.Contains(t, joined, "| observed: fanout ")

		// The timeline survives the file.
		path := filepath.Join(t.TempDir(), "r.json")
		require.NoError(t, res.WriteFile(path))
		back, err := result.ReadResult(path)
		require.NoError(t, err)
		require.NotNil(t, back.Timeline)
		assert.Equal(t, tl.T, back.Timeline.T)
		assert.Equal(t, get.P99, back.Timeline.Kind("get").P99)
		assert.Equal(t, tl.Phases, back.Timeline.Phases)
	})
}

// TestTimelineOff keeps no timeline when SeriesEvery is negative, and the
// progress lines go on.
func TestTimelineOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n int
		res := run(t, loadtest.Scenario{
			SeriesEvery: -1,
			Workload:    &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
			Plan:        loadtest.Ladder{Steps: []loadtest.Step{{Level: 10, Hold: 11 * time.Second}}},
			Logf:        func(string, ...any) { n++ },
		})
		assert.Nil(t, res.Timeline)
		assert.GreaterOrEqual(t, n, 2)
	})
}
