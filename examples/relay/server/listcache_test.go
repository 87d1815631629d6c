package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestListCacheExpiry(t *testing.T) {
	now := time.Unix(1000, 0)
	res := json.RawMessage(`{"tools":[]}`)

	c := newListCache(2 * time.Second)
	_, ok := c.get(1, now)
	assert.False(t, ok, "nothing kept yet")
	c.put(1, res, now)
	got, ok := c.get(1, now.Add(time.Second))
	assert.True(t, ok, "within the TTL")
	assert.Equal(t, res, got)
	_, ok = c.get(2, now)
	assert.False(t, ok, "per user")
	_, ok = c.get(1, now.Add(3*time.Second))
	assert.False(t, ok, "expired")

	off := newListCache(0)
	off.put(1, res, now)
	_, ok = off.get(1, now)
	assert.False(t, ok, "a zero TTL keeps nothing")
}

func TestCallTraceSampling(t *testing.T) {
	tests := []struct {
		mode  string
		every int
		want  int // traced of 100 calls
	}{
		{TraceOff, 10, 0},      // off traces nothing
		{TraceSampled, 10, 10}, // one in ten
		{TraceSampled, 1, 100}, // one in one is every call
		{TraceFull, 10, 100},   // full ignores the period
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		cfg.CallTrace, cfg.TraceEvery = tc.mode, tc.every
		c := newCallTrace(cfg, nil)
		n := 0
		for range 100 {
			if c.sample() {
				n++
			}
		}
		assert.Equal(t, tc.want, n, "%s every %d", tc.mode, tc.every)
	}
}
