package server

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestAuthCacheExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newAuthCache(5 * time.Second)
	p := principal{UserID: 1, WorkspaceID: 2}
	_, ok := c.get("h", now)
	assert.False(t, ok, "empty")
	c.put("h", p, now)
	got, ok := c.get("h", now.Add(5*time.Second))
	assert.True(t, ok, "at the TTL")
	assert.Equal(t, p, got)
	_, ok = c.get("h", now.Add(5*time.Second+1))
	assert.False(t, ok, "past the TTL")

	off := newAuthCache(0)
	off.put("h", p, now)
	_, ok = off.get("h", now)
	assert.False(t, ok, "TTL 0 remembers nothing")
}

func TestBearerToken(t *testing.T) {
	tests := []struct {
		header, want string
	}{
		{"Bearer abc", "abc"},   // the usual form
		{"bearer  abc ", "abc"}, // any case, spaces trimmed
		{"Basic abc", ""},       // another scheme
		{"Bearer", ""},          // no token
		{"", ""},                // no header
		{"Bearer a b", "a b"},   // kept as sent past the scheme
	}
	for _, tc := range tests {
		t.Run("header="+tc.header, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			assert.Equal(t, tc.want, bearerToken(r))
		})
	}
}
