// Package format prints figures the way every report of Headroom does:
// load levels, latencies, limits, commits.
package format

import (
	"fmt"
	"math"
	"time"

	"github.com/docker/go-units"
)

// Level prints a load level as reports do: whole numbers with
// thousands separators ("3,000"), others with one decimal.
func Level(v float64) string {
	if v != math.Trunc(v) || math.Abs(v) >= 1e15 {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%d", int64(v))
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Latency prints a latency as reports do: "850 µs", "12.5 ms",
// "340 ms", "1.2 s"; "–" for zero.
func Latency(d time.Duration) string {
	switch {
	case d == 0:
		return "–"
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// Limits prints a target's limits as reports do: "1 CPU / 512MiB",
// "unlimited CPU / unlimited memory".
func Limits(cpus float64, mem int64) string {
	c, m := "unlimited CPU", "unlimited memory"
	if cpus > 0 {
		c = fmt.Sprintf("%g CPU", cpus)
	}
	if mem > 0 {
		m = units.BytesSize(float64(mem))
	}
	return c + " / " + m
}

// Commit abbreviates a commit hash to 12 characters, "unknown" when
// there is none.
func Commit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	if c == "" {
		return "unknown"
	}
	return c
}

// Pct prints a fraction as a percentage of three significant digits:
// 0.0123 is "1.23%".
func Pct(f float64) string { return fmt.Sprintf("%.3g%%", f*100) }

// FirstOr returns the first of ss, or def when there is none.
func FirstOr(ss []string, def string) string {
	if len(ss) > 0 {
		return ss[0]
	}
	return def
}
