package kit

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEnvReadsAndKeepsDefaults(t *testing.T) {
	vars := map[string]string{"S": " x ", "D": "1500ms", "Z": "0", "N": "42", "B": "on", "L": "warn"}
	e := NewEnv(func(k string) string { return vars[k] })
	s, d, z, n, b, l := "def", time.Second, time.Second, 7, false, slog.LevelInfo
	kept := "kept"
	e.String("S", &s)
	e.String("UNSET", &kept)
	e.Duration("D", &d)
	e.DurationOrZero("Z", &z)
	e.Int("N", &n)
	e.Bool("B", &b)
	e.LogLevel("L", &l)
	require.NoError(t, e.Err())
	assert.Equal(t, "x", s)
	assert.Equal(t, "kept", kept)
	assert.Equal(t, 1500*time.Millisecond, d)
	assert.Equal(t, time.Duration(0), z)
	assert.Equal(t, 42, n)
	assert.True(t, b)
	assert.Equal(t, slog.LevelWarn, l)
}

// Every bad value is reported at once, each naming its variable.
func TestEnvReportsEveryBadValue(t *testing.T) {
	vars := map[string]string{"D": "0", "N": "-3", "B": "yes", "L": "loud", "P": "x"}
	e := NewEnv(func(k string) string { return vars[k] })
	var d time.Duration
	var n int64
	var b bool
	var l slog.Level
	e.Duration("D", &d)
	e.Int64("N", &n)
	e.Bool("B", &b)
	e.LogLevel("L", &l)
	e.Parse("P", func(string) error { return assert.AnError })
	err := e.Err()
	require.Error(t, err)
	for _, want := range []string{`D="0": want a positive duration`, `N="-3": want a positive integer`, `B="yes": want 0 or 1`, `L="loud": want debug`, "P: " + assert.AnError.Error()} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Zero(t, d, "a bad value leaves the default")
}
