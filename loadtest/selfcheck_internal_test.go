package loadtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// Every bound of the generator's self-check, at and past its limit, and
// disabled.
func TestSelfCheckReasons(t *testing.T) {
	sc := SelfCheck{}.withDefaults()
	healthy := result.SelfCheckResult{ScheduleLagP99: time.Millisecond, CPU: 0.3, QueuedP99: time.Millisecond,
		Memory: 100 << 20, MemoryLimit: 1 << 30, Files: 200, FileLimit: 20000}
	require.Empty(t, sc.reasons(healthy, false))
	for _, tc := range []struct {
		name   string
		change func(r *result.SelfCheckResult)
		want   string
	}{
		// Requests started 80 ms late.
		{"lag", func(r *result.SelfCheckResult) { r.ScheduleLagP99, r.LateStarts = 80*time.Millisecond, 5 }, "schedule lag p99 80ms > 50ms (5 started later than that)"},
		// 95% of the cores.
		{"cpu", func(r *result.SelfCheckResult) { r.CPU = 0.95 }, "the generator used 95% of its"},
		// Requests waited 4 s for a pool connection.
		{"queue", func(r *result.SelfCheckResult) { r.QueuedP99, r.QueuedMax = 3*time.Second, 4100*time.Millisecond }, "p99 3s, up to 4.1s (bound 10ms)"},
		// 950 MiB of a 1 GiB limit.
		{"memory", func(r *result.SelfCheckResult) { r.Memory = 950 << 20 }, "the generator's memory reached 950MiB of its 1GiB limit"},
		// 18,500 of 20,000 descriptors.
		{"files", func(r *result.SelfCheckResult) { r.Files = 18500 }, "the generator held 18500 open descriptors of its limit of 20000"},
	} {
		t.Run("bound="+tc.name, func(t *testing.T) {
			r := healthy
			tc.change(&r)
			got := sc.reasons(r, false)
			require.Len(t, got, 1)
			assert.Contains(t, got[0], tc.want)
		})
	}
	// A p99 beyond the bound that rests on fewer than five late starts
	// (a few hundred starts, one stall of the machine) does not void it.
	r := healthy
	r.ScheduleLagP99, r.LateStarts = 80*time.Millisecond, 4
	assert.Empty(t, sc.reasons(r, false))

	// A negative bound disables its check; an unknown limit checks nothing.
	off := SelfCheck{MaxMemory: -1, MaxFiles: -1}.withDefaults()
	r = healthy
	r.Memory, r.Files = 1<<30, 20000
	assert.Empty(t, off.reasons(r, false))
	r.MemoryLimit, r.FileLimit = 0, 0
	assert.Empty(t, sc.reasons(r, false))
}

// The generator's own series carry their limits, so the self-check can
// judge them.
func TestProcessSamplerLimits(t *testing.T) {
	p := newProcessSampler()
	ms, err := p.Sample(t.Context(), time.Now())
	require.NoError(t, err)
	limits := map[string]float64{}
	for _, m := range ms {
		limits[m.Metric] = m.Limit
	}
	assert.Positive(t, limits["memory"], "memory limit known")
	assert.Positive(t, limits["files"], "descriptor limit known")
}

// A -short run of Test bounds the schedule lag at shortScheduleLag unless
// the scenario set its own bound; a full-size run keeps the default.
func TestShortRunScheduleLagBound(t *testing.T) {
	s := Scenario{}
	shortDefaults(&s, false)
	assert.Equal(t, time.Duration(0), s.SelfCheck.MaxScheduleLag)
	assert.Equal(t, 50*time.Millisecond, s.SelfCheck.withDefaults().MaxScheduleLag)
	shortDefaults(&s, true)
	assert.Equal(t, shortScheduleLag, s.SelfCheck.MaxScheduleLag)
	late := result.SelfCheckResult{ScheduleLagP99: 80 * time.Millisecond, LateStarts: 8}
	assert.Empty(t, s.SelfCheck.withDefaults().reasons(late, false), "80 ms late in a -short run")
	late.ScheduleLagP99 = 300 * time.Millisecond
	assert.NotEmpty(t, s.SelfCheck.withDefaults().reasons(late, false), "300 ms late in a -short run")
	own := Scenario{SelfCheck: SelfCheck{MaxScheduleLag: 20 * time.Millisecond}}
	shortDefaults(&own, true)
	assert.Equal(t, 20*time.Millisecond, own.SelfCheck.MaxScheduleLag)
	off := Scenario{SelfCheck: SelfCheck{MaxScheduleLag: -1}}
	shortDefaults(&off, true)
	assert.Equal(t, time.Duration(-1), off.SelfCheck.MaxScheduleLag)
}

// A -short run of Test records the host but does not judge it, unless the
// scenario set its own bounds; a full-size run judges it.
func TestShortRunHostNotJudged(t *testing.T) {
	busy := result.SelfCheckResult{HostCores: 2, HostSteal: 0.5, HostOther: 1}
	full := Scenario{}
	shortDefaults(&full, false)
	assert.Len(t, full.SelfCheck.withDefaults().hostDoubts(busy), 2, "a full-size run")
	short := Scenario{}
	shortDefaults(&short, true)
	assert.Empty(t, short.SelfCheck.withDefaults().hostDoubts(busy), "a -short run")
	own := Scenario{SelfCheck: SelfCheck{MaxHostSteal: 0.2}}
	shortDefaults(&own, true)
	assert.Len(t, own.SelfCheck.withDefaults().hostDoubts(busy), 1, "a -short run with the scenario's own steal bound")
}
