package format

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLevel(t *testing.T) {
	assert.Equal(t, "3,000", Level(3000))
	assert.Equal(t, "-1,234,567", Level(-1234567))
	assert.Equal(t, "999", Level(999))
	assert.Equal(t, "2.5", Level(2.5))
}

func TestLatency(t *testing.T) {
	assert.Equal(t, "–", Latency(0))
	assert.Equal(t, "850 µs", Latency(850*time.Microsecond))
	assert.Equal(t, "12.5 ms", Latency(12500*time.Microsecond))
	assert.Equal(t, "340 ms", Latency(340*time.Millisecond))
	assert.Equal(t, "1.2 s", Latency(1200*time.Millisecond))
}

func TestLimits(t *testing.T) {
	assert.Equal(t, "1 CPU / 512MiB", Limits(1, 512<<20))
	assert.Equal(t, "unlimited CPU / unlimited memory", Limits(0, 0))
}

func TestCommit(t *testing.T) {
	assert.Equal(t, "0123456789ab", Commit("0123456789abcdef0123"))
	assert.Equal(t, "unknown", Commit(""))
	assert.Equal(t, "abc", Commit("abc"))
}

func TestPct(t *testing.T) {
	assert.Equal(t, "1.23%", Pct(0.0123))
	assert.Equal(t, "0%", Pct(0))
}

func TestFirstOr(t *testing.T) {
	assert.Equal(t, "a", FirstOr([]string{"a", "b"}, "none"))
	assert.Equal(t, "none", FirstOr(nil, "none"))
}
