package server

import (
	"sync"
	"time"
)

// ttlCache keeps values for a time: validated tokens (authCache), users'
// tool listings (listCache). It holds at most max entries: when full, the
// expired ones are dropped, and if none had expired, all of them. A zero
// TTL keeps nothing.
type ttlCache[K comparable, V any] struct {
	ttl time.Duration
	max int
	mu  sync.RWMutex
	m   map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func newTTLCache[K comparable, V any](ttl time.Duration, max int) *ttlCache[K, V] {
	return &ttlCache[K, V]{ttl: ttl, max: max, m: map[K]ttlEntry[V]{}}
}

// get returns the value kept for k, if it has not expired at now.
func (c *ttlCache[K, V]) get(k K, now time.Time) (V, bool) {
	var zero V
	if c.ttl <= 0 {
		return zero, false
	}
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok || now.After(e.expires) {
		return zero, false
	}
	return e.v, true
}

// put keeps v for k until now + TTL.
func (c *ttlCache[K, V]) put(k K, v V, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		for k, e := range c.m {
			if now.After(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= c.max {
			clear(c.m)
		}
	}
	c.m[k] = ttlEntry[V]{v: v, expires: now.Add(c.ttl)}
}
