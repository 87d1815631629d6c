package loadtest

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// arrival is one arrival of a simulated schedule.
type arrival struct {
	at  time.Time
	mix int
}

// announced is a ramp as the aligned runner sets it: at announce, for the
// instant at.
type announced struct {
	announce, at time.Time
	level        float64
	dur          time.Duration
}

// simulate runs the pacer of the shard sh over the ramps the way the
// scheduler goroutine does — a ramp announced before the arrival being
// waited for re-plans it — and returns the shard's arrivals until until.
func simulate(seed uint64, poisson bool, weights []float64, sh result.Shard, ramps []announced, until time.Time) []arrival {
	opts := make([]dist.Weighted[int], len(weights))
	for i, w := range weights {
		opts[i] = dist.Weighted[int]{Weight: w, Value: i}
	}
	choice, _ := dist.NewChoice(opts...)
	p := pacer{rng: dist.New(seed, math.MaxUint64), choice: choice, poisson: poisson, shard: sh}
	p.need = p.gap()
	l := newLevel()
	next := 0
	var out []arrival
	for {
		r, _ := l.get()
		at, ok := p.plan(r)
		if next < len(ramps) && (!ok || !at.Before(ramps[next].announce)) {
			l.set(ramps[next].level, ramps[next].dur, ramps[next].at)
			next++
			continue
		}
		if !ok || at.After(until) {
			return out
		}
		if mix, _, own := p.take(at); own {
			out = append(out, arrival{at, mix})
		}
	}
}

// ladderRamps returns the ramps the aligned runner sets for steps from t0.
func ladderRamps(t0 time.Time, gap time.Duration, steps ...Step) ([]announced, time.Time) {
	var out []announced
	at, announce := t0, t0.Add(-time.Second)
	for _, s := range steps {
		out = append(out, announced{announce: announce, at: at, level: s.Level, dur: s.Ramp})
		announce = at.Add(s.Ramp) // the next ramp is set when this hold begins
		at = announce.Add(s.Hold + gap)
	}
	return out, at
}

// TestShardScheduleUnion: the arrivals of N shards together are exactly the
// one-process schedule of the same seed — every time and every kind — for
// constant spacing and Poisson arrivals, over ramps, holds and jumps.
func TestShardScheduleUnion(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ramps, end := ladderRamps(t0, 500*time.Millisecond,
		Step{Level: 50, Ramp: time.Second, Hold: 2 * time.Second},
		Step{Level: 137, Ramp: 700 * time.Millisecond, Hold: 2 * time.Second},
		Step{Level: 20, Hold: time.Second},  // a jump down
		Step{Level: 300, Hold: time.Second}) // a jump up
	weights := []float64{3, 1, 0.5}
	for _, poisson := range []bool{false, true} {
		for _, n := range []int{2, 3, 7} {
			single := simulate(42, poisson, weights, result.Shard{}, ramps, end)
			if len(single) < 500 {
				t.Fatalf("only %d arrivals in the one-process schedule", len(single))
			}
			var union []arrival
			for i := range n {
				part := simulate(42, poisson, weights, result.Shard{Index: i, Count: n}, ramps, end)
				if d := len(part) - len(single)/n; d < -1 || d > 1 {
					t.Errorf("poisson=%v n=%d: shard %d has %d arrivals of %d", poisson, n, i, len(part), len(single))
				}
				union = append(union, part...)
			}
			slices.SortStableFunc(union, func(a, b arrival) int { return a.at.Compare(b.at) })
			if !slices.Equal(union, single) {
				t.Fatalf("poisson=%v n=%d: the union of the shards' schedules (%d arrivals) differs from the one-process schedule (%d)", poisson, n, len(union), len(single))
			}
		}
	}
}

// TestShardSchedulePlanAhead: a ramp set ahead of its instant changes the
// schedule at that instant, exactly as a ramp set at it.
func TestShardSchedulePlanAhead(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	steps := []Step{{Level: 80, Ramp: time.Second, Hold: time.Second}, {Level: 160, Ramp: 500 * time.Millisecond, Hold: time.Second}}
	ahead, end := ladderRamps(t0, time.Second, steps...)
	onTime := slices.Clone(ahead)
	for i := range onTime {
		onTime[i].announce = onTime[i].at
	}
	a := simulate(7, true, []float64{1}, result.Shard{}, ahead, end)
	b := simulate(7, true, []float64{1}, result.Shard{}, onTime, end)
	if !slices.Equal(a, b) {
		t.Fatalf("ramps set ahead give %d arrivals, set on time %d, or other times", len(a), len(b))
	}
}

// TestShardUsersPartition: with users sharded, each user runs on exactly one
// shard (u mod Count), with the random sequence it has in one process.
func TestShardUsersPartition(t *testing.T) {
	type seen struct {
		shard int
		first uint64
	}
	run := func(sh result.Shard, levels ...float64) map[int]seen {
		var mu sync.Mutex
		got := map[int]seen{}
		w := &Users{Kinds: []string{"x"}, Behavior: func(u *User) {
			mu.Lock()
			got[u.ID] = seen{sh.Index, u.Rand.Uint64()}
			mu.Unlock()
			<-u.Context().Done()
		}}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		d := w.startShard(ctx, NewRecorder(), 9, sh)
		at := time.Now().Add(20 * time.Millisecond)
		for _, l := range levels { // each ramp set ahead, once the one before has ended
			d.(rampAter).rampAt(l, 30*time.Millisecond, at)
			time.Sleep(time.Until(at.Add(40 * time.Millisecond)))
			at = at.Add(60 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		ud := d.(*users)
		ud.mu.Lock()
		running := len(ud.active)
		ud.mu.Unlock()
		d.Stop()
		want := 0
		last := int(levels[len(levels)-1])
		for u := range last {
			if owns(sh, uint64(u)) {
				want++
			}
		}
		if running != want {
			t.Errorf("%v runs %d users at level %d, want %d", sh, running, last, want)
		}
		return got
	}
	single := run(result.Shard{}, 10, 25, 17)
	union := map[int]seen{}
	for i := range 3 {
		for id, s := range run(result.Shard{Index: i, Count: 3}, 10, 25, 17) {
			if _, dup := union[id]; dup {
				t.Errorf("user %d ran on two shards", id)
			}
			if id%3 != i {
				t.Errorf("user %d ran on shard %d, want %d", id, i, id%3)
			}
			union[id] = s
		}
	}
	if len(union) != len(single) || len(single) != 25 {
		t.Fatalf("%d users ran on the shards, %d in one process; want 25", len(union), len(single))
	}
	for id, s := range single {
		if union[id].first != s.first {
			t.Errorf("user %d draws %d on its shard, %d in one process", id, union[id].first, s.first)
		}
	}
}

// TestShardValidate: a sharded knee search, a missing start and a bad index
// are refused with the reason.
func TestShardValidate(t *testing.T) {
	w := &Arrivals{Mix: []Kind{{Name: "get", Weight: 1, Do: func(context.Context) Response { return Response{} }}}}
	for _, tc := range []struct {
		s    Scenario
		want string
	}{
		{Scenario{Workload: w, Plan: Knee{Start: 10, Factor: 2, Max: 100, Hold: time.Second}, Shard: result.Shard{Count: 2, StartAt: time.Now()}}, "needs a Ladder"},
		{Scenario{Workload: w, Plan: Levels(0, time.Second, 10), Shard: result.Shard{Count: 2}}, "StartAt is zero"},
		{Scenario{Workload: w, Plan: Levels(0, time.Second, 10), Shard: result.Shard{Index: 2, Count: 2, StartAt: time.Now()}}, "0 <= Index < Count"},
	} {
		err := tc.s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error saying %q", err, tc.want)
		}
	}
}
