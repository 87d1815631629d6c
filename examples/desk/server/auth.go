package server

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/examples/desk/schema"
)

// accessCache remembers the principal of each session token hash for a
// TTL, so that a signed-in agent's requests skip the session lookup. A nil
// *accessCache (DESK_ACCESS_CACHE=0) remembers nothing.
type accessCache struct {
	ttl time.Duration
	mu  sync.Mutex
	m   map[string]accessEntry
}

type accessEntry struct {
	p   principal
	exp time.Time
}

// maxAccessEntries bounds the cache; past it, it starts over.
const maxAccessEntries = 100_000

func newAccessCache(enabled bool, ttl time.Duration) *accessCache {
	if !enabled {
		return nil
	}
	return &accessCache{ttl: ttl, m: map[string]accessEntry{}}
}

func (c *accessCache) get(hash string, now time.Time) (principal, bool) {
	if c == nil {
		return principal{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || now.After(e.exp) {
		return principal{}, false
	}
	return e.p, true
}

func (c *accessCache) put(hash string, p principal, now time.Time) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxAccessEntries {
		clear(c.m)
	}
	c.m[hash] = accessEntry{p: p, exp: now.Add(c.ttl)}
}

// principalFor authenticates r by its bearer token; on failure it answers
// 401 (or 503 when the database fails) and returns false.
func (s *Server) principalFor(w http.ResponseWriter, r *http.Request) (principal, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	tok = strings.TrimSpace(tok)
	if !ok || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="desk"`)
		writeError(w, http.StatusUnauthorized, "sign in: send Authorization: Bearer <session token>")
		return principal{}, false
	}
	hash := schema.TokenHash(tok)
	now := time.Now()
	if p, ok := s.access.get(hash, now); ok {
		s.metrics.access("hit")
		return p, true
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	p, found, err := lookupSession(ctx, s.pool, hash)
	if err != nil {
		s.dbError(w, r, err)
		return principal{}, false
	}
	if !found {
		s.metrics.access("unknown")
		w.Header().Set("WWW-Authenticate", `Bearer realm="desk", error="invalid_token"`)
		writeError(w, http.StatusUnauthorized, "unknown or expired session token")
		return principal{}, false
	}
	if s.access != nil {
		s.metrics.access("miss")
	} else {
		s.metrics.access("off")
	}
	s.access.put(hash, p, now)
	return p, true
}
