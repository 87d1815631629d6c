package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

// authCacheMax is the most tokens the cache remembers.
const authCacheMax = 100_000

// authCache remembers validated tokens for a short time, keyed by their
// hash. Failed lookups are not remembered.
type authCache = ttlCache[string, principal]

func newAuthCache(ttl time.Duration) *authCache {
	return newTTLCache[string, principal](ttl, authCacheMax)
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// header, or "" when there is none.
func bearerToken(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// principalFor validates the request's bearer token: from the cache, or
// with one query. It answers 401 (or 503 when the database fails) itself
// and returns ok false then.
func (s *Server) principalFor(w http.ResponseWriter, r *http.Request) (principal, bool) {
	tok := bearerToken(r)
	if tok == "" {
		unauthorized(w, "missing bearer token: send Authorization: Bearer <token>")
		return principal{}, false
	}
	hash := schema.TokenHash(tok)
	now := time.Now()
	useCache := !s.cfg.Faults.AuthNoCache
	if useCache {
		if p, ok := s.auth.get(hash, now); ok {
			return p, true
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	p, ok, err := s.store.authenticate(ctx, hash)
	if err != nil {
		s.log.Error("relay: token lookup failed", "err", err)
		writeJSONError(w, http.StatusServiceUnavailable, "the database did not answer; retry")
		return principal{}, false
	}
	if !ok {
		unauthorized(w, "unknown bearer token")
		return principal{}, false
	}
	if useCache {
		s.auth.put(hash, p, now)
	}
	return p, true
}

func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="relay"`)
	writeJSONError(w, http.StatusUnauthorized, msg)
}
