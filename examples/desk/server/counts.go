package server

import (
	"context"
	"sync"
	"time"
)

// countsCache holds each unit's shared sidebar counts: computed once for
// all agents of the unit, kept up to a TTL or until a change in the unit
// (invalidate). Concurrent requests for a unit whose counts are missing
// wait for one computation instead of each running its own.
type countsCache struct {
	ttl     time.Duration
	compute func(ctx context.Context, unit int64) (*unitCounts, error)
	mu      sync.Mutex
	units   map[int64]*countsEntry
}

type countsEntry struct {
	val      *unitCounts
	at       time.Time
	valGen   uint64        // gen when val's computation started
	gen      uint64        // bumped by every change in the unit
	inflight chan struct{} // closed when the running computation ends
}

func newCountsCache(ttl time.Duration, compute func(context.Context, int64) (*unitCounts, error)) *countsCache {
	return &countsCache{ttl: ttl, compute: compute, units: map[int64]*countsEntry{}}
}

// computeTimeout bounds one shared computation, which runs on behalf of
// every waiting request and so is not cancelled with the first one.
const computeTimeout = 10 * time.Second

// get returns unit's counts, fresh (no change since their computation
// started, and younger than the TTL) or computed now. computed says
// whether this call ran the computation.
func (c *countsCache) get(ctx context.Context, unit int64) (u *unitCounts, computed bool, err error) {
	c.mu.Lock()
	e := c.units[unit]
	if e == nil {
		e = &countsEntry{}
		c.units[unit] = e
	}
	asked := time.Now()
	for {
		// Fresh counts; or counts computed since this request came in,
		// even if a change arrived meanwhile (that change's own
		// notification makes clients ask again): waiters never chase
		// a stream of changes.
		if e.val != nil && ((e.valGen == e.gen && time.Since(e.at) < c.ttl) || !e.at.Before(asked)) {
			v := e.val
			c.mu.Unlock()
			return v, false, nil
		}
		if e.inflight == nil {
			break
		}
		ch := e.inflight
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
		c.mu.Lock()
		// The computation failed: start one, or wait for another.
	}
	ch := make(chan struct{})
	e.inflight = ch
	gen := e.gen
	c.mu.Unlock()

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), computeTimeout)
	v, err := c.compute(cctx, unit)
	cancel()

	c.mu.Lock()
	e.inflight = nil
	if err == nil {
		e.val, e.at, e.valGen = v, time.Now(), gen
	}
	close(ch)
	c.mu.Unlock()
	return v, true, err
}

// invalidate marks unit's counts stale: the next get recomputes them.
func (c *countsCache) invalidate(unit int64) {
	c.mu.Lock()
	if e := c.units[unit]; e != nil {
		e.gen++
	}
	c.mu.Unlock()
}

// invalidateAll marks every unit's counts stale (after the LISTEN
// connection was lost, when changes may have been missed).
func (c *countsCache) invalidateAll() {
	c.mu.Lock()
	for _, e := range c.units {
		e.gen++
	}
	c.mu.Unlock()
}
