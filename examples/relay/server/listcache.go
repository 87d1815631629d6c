package server

import (
	"encoding/json"
	"time"
)

// listCacheMax is the most users whose tools/list answer the cache keeps.
const listCacheMax = 100_000

// listCache keeps each user's complete tools/list answer for a short time
// (Config.ListCacheTTL), so that a listing within it is answered without
// asking the upstream. Partial answers (a connector failed) are not kept.
// A zero TTL keeps nothing.
type listCache = ttlCache[int64, json.RawMessage]

func newListCache(ttl time.Duration) *listCache {
	return newTTLCache[int64, json.RawMessage](ttl, listCacheMax)
}
