package loadtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// owns reports whether arrival or user i is the shard's.
func owns(s result.Shard, i uint64) bool {
	return s.Count <= 1 || i%uint64(s.Count) == uint64(s.Index)
}

// shardable is a workload that can run a slice of its load.
type shardable interface {
	startShard(ctx context.Context, rec *Recorder, seed uint64, sh result.Shard) Driver
}

// rampAter is a driver whose ramps can be set ahead, on a wall-clock instant.
type rampAter interface {
	rampAt(level float64, d time.Duration, at time.Time)
}

// validateShard reports a shard the scenario cannot run.
func validateShard(s result.Shard, w Workload, p Plan) error {
	if s.Count == 0 && s.Index == 0 && s.StartAt.IsZero() {
		return nil
	}
	var errs []error
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		errs = append(errs, fmt.Errorf("scenario: Shard %d of %d: give 0 <= Index < Count", s.Index, s.Count))
	}
	if s.StartAt.IsZero() {
		errs = append(errs, errors.New("scenario: Shard.StartAt is zero; give every shard the same start instant, a little ahead (shards begin the plan then)"))
	}
	if s.Gap < 0 || s.MaxSkew < 0 {
		errs = append(errs, fmt.Errorf("scenario: Shard.Gap %v and MaxSkew %v must be >= 0", s.Gap, s.MaxSkew))
	}
	if _, ok := w.(shardable); w != nil && !ok {
		errs = append(errs, fmt.Errorf("scenario: the workload %T cannot be sharded; use loadtest.Arrivals or loadtest.Users", w))
	}
	if p != nil && ladderSteps(p) == nil {
		errs = append(errs, fmt.Errorf("scenario: a sharded run needs a Ladder, not %s: a knee search decides each step from the merged step before, which would need a coordinator between steps; find the knee's region on one machine, then run a Ladder around it with shards", describePlan(p).Type))
	}
	return errors.Join(errs...)
}

// ladderSteps returns a ladder plan's steps, nil for another plan.
func ladderSteps(p Plan) []Step {
	switch p := p.(type) {
	case Ladder:
		return p.Steps
	case *Ladder:
		return p.Steps
	}
	return nil
}

// aligned is a shard's course: its slice of the workload, every step on
// wall-clock instants all shards share.
type aligned struct{ r *runner }

// start starts this shard's slice of the workload.
func (c aligned) start(ctx context.Context) Driver {
	return c.r.s.Workload.(shardable).startShard(ctx, c.r.rec, c.r.s.Seed, c.r.s.Shard)
}

// steps runs every step of the ladder on wall-clock instants: step i
// ramps at StartAt + the ramps, holds and gaps of the steps before it and
// holds from the end of its ramp. Each ramp is set on the driver ahead of
// its instant, while the step before holds, so that every shard's schedule
// changes at the same point.
func (c aligned) steps(ctx, bg context.Context, drv Driver) error {
	r := c.r
	sh := r.s.Shard.WithDefaults()
	steps := ladderSteps(r.s.Plan)
	ra := drv.(rampAter)
	at := sh.StartAt
	if late := time.Since(at); late > 0 {
		r.s.Logf("%s: started %v after the common start instant", sh, late.Round(time.Millisecond))
	}
	ra.rampAt(steps[0].Level, steps[0].Ramp, at)
	for i, step := range steps {
		holdAt := at.Add(step.Ramp)
		endAt := holdAt.Add(step.Hold)
		next := endAt.Add(sh.Gap)
		if !sleepUntil(ctx, at) {
			r.res.Partial = true
			return ctx.Err()
		}
		r.setPhase(i, "ramp", step.Level)
		if !sleepUntil(ctx, holdAt) {
			r.res.Partial = true
			return ctx.Err()
		}
		// The next ramp is set ahead, while this step holds.
		var rampNext func()
		if i+1 < len(steps) {
			rampNext = func() { ra.rampAt(steps[i+1].Level, steps[i+1].Ramp, next) }
		}
		// A shard keeps the common schedule and does not wait for its
		// users to start (settle); it says how many were still starting.
		var unsettled int64
		if st, ok := drv.(starter); ok {
			if unsettled = st.Starting(); unsettled > 0 {
				r.s.Logf("%s: %d users still starting as step %d's hold begins: their start-up work is in it (lengthen the ramp)", sh, unsettled, i+1)
			}
		}
		sr, start, completed := r.hold(ctx, bg, i, step, endAt, rampNext)
		sr.Unsettled = unsettled
		if late := start.Sub(holdAt); late > sh.MaxSkew {
			sr.Self.Reasons = append(sr.Self.Reasons, fmt.Sprintf("%s began its hold %v after the common instant (bound %v): its window does not match the other shards'; start the shards earlier (-start-at) or lengthen the gap between steps (-step-gap) if the step before drained slowly",
				sh, late.Round(time.Millisecond), sh.MaxSkew))
			sr.Verdict = result.Invalid
		}
		if !completed {
			sr.Verdict = result.Incomplete
		}
		r.record(sr)
		if !completed {
			r.res.Partial = true
			return ctx.Err()
		}
		at = next
	}
	return nil
}

// joinShard makes the run one shard of a run of several processes: its
// result says which, and the host's other load is the other shards', not
// a busy neighbour's. The shard runs its steps aligned.
func (r *runner) joinShard() course {
	if r.s.Shard.Count > 1 {
		r.s.SelfCheck.MaxHostOther = -1
	}
	name, _ := os.Hostname()
	r.res.Shard = &result.ShardInfo{Shard: r.s.Shard.WithDefaults(), Host: hostID(), Name: name}
	return aligned{r}
}

// shareOf returns how many of n users are the shard's: n when the run is
// not sharded.
func shareOf(sh result.Shard, n int) int {
	if sh.Count <= 1 {
		return n
	}
	owned := n / sh.Count
	if sh.Index < n%sh.Count {
		owned++
	}
	return owned
}
