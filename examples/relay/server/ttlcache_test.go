package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestTTLCacheBound: a full cache drops its expired entries first, and
// everything when none has expired, so it never holds more than its bound.
func TestTTLCacheBound(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newTTLCache[int, string](10*time.Second, 3)
	c.put(1, "a", now)
	c.put(2, "b", now.Add(5*time.Second))
	c.put(3, "c", now.Add(5*time.Second))
	c.put(4, "d", now.Add(12*time.Second)) // full: 1 has expired and goes
	assert.Len(t, c.m, 3)
	_, ok := c.get(1, now.Add(12*time.Second))
	assert.False(t, ok)
	v, ok := c.get(2, now.Add(12*time.Second))
	assert.True(t, ok)
	assert.Equal(t, "b", v)

	c.put(5, "e", now.Add(13*time.Second)) // full, nothing expired: all go
	assert.Len(t, c.m, 1)
	v, ok = c.get(5, now.Add(13*time.Second))
	assert.True(t, ok)
	assert.Equal(t, "e", v)
}
