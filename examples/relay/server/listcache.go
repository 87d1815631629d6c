package server

import (
	"encoding/json"
	"sync"
	"time"
)

// listCacheMax is the most users whose tools/list answer the cache keeps.
const listCacheMax = 100_000

// listCache keeps each user's complete tools/list answer for a short time
// (Config.ListCacheTTL), so that a listing within it is answered without
// asking the upstream. Partial answers (a connector failed) are not kept.
// A zero TTL keeps nothing.
type listCache struct {
	ttl time.Duration
	mu  sync.RWMutex
	m   map[int64]listEntry
}

type listEntry struct {
	result  json.RawMessage
	expires time.Time
}

func newListCache(ttl time.Duration) *listCache {
	return &listCache{ttl: ttl, m: map[int64]listEntry{}}
}

// get returns the user's kept answer, if it has not expired at now.
func (c *listCache) get(userID int64, now time.Time) (json.RawMessage, bool) {
	if c.ttl <= 0 {
		return nil, false
	}
	c.mu.RLock()
	e, ok := c.m[userID]
	c.mu.RUnlock()
	if !ok || now.After(e.expires) {
		return nil, false
	}
	return e.result, true
}

// put keeps the user's answer until now + TTL.
func (c *listCache) put(userID int64, result json.RawMessage, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= listCacheMax {
		for k, e := range c.m {
			if now.After(e.expires) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= listCacheMax {
			clear(c.m)
		}
	}
	c.m[userID] = listEntry{result: result, expires: now.Add(c.ttl)}
}
