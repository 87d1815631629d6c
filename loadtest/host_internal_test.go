package loadtest

import (
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// The host's busy and stolen cores, averaged between samples, from its CPU
// times; an interval too short to tell is skipped until it is long enough,
// and one whose ticks do not match the run's clock (virtual time) is not
// measured.
func TestHostSampler(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	readings := []struct {
		at time.Time
		ht hostTimes
	}{
		{t0, hostTimes{busy: 0, steal: 0, total: 0, cpus: 2}},
		{t0.Add(100 * time.Millisecond), hostTimes{busy: 10, steal: 1, total: 20, cpus: 2}}, // 20 ticks over 2 cores: too short
		{t0.Add(time.Second), hostTimes{busy: 150, steal: 40, total: 200, cpus: 2}},         // since the first: 200 ticks in 1 s
		{t0.Add(6 * time.Second), hostTimes{busy: 160, steal: 40, total: 220, cpus: 2}},     // 5 s of the run's clock, 0.1 s of the host's
	}
	i := 0
	h := &hostSampler{read: func() (hostTimes, bool) { return readings[i].ht, true }}
	sample := func() []Measurement {
		ms, err := h.Sample(context.Background(), readings[i].at)
		require.NoError(t, err)
		i++
		return ms
	}
	assert.Empty(t, sample(), "the first reading only starts the interval")
	assert.Empty(t, sample(), "too short an interval")
	ms := sample()
	require.Len(t, ms, 2)
	assert.InDelta(t, 1.5, ms[0].Value, 1e-9, "busy: 150 of 200 ticks of 2 cores")
	assert.InDelta(t, 0.4, ms[1].Value, 1e-9, "steal: 40 of 200 ticks of 2 cores")
	assert.Empty(t, sample(), "virtual time: the ticks do not match the clock")
}

// A step whose host was busy with other work, or whose cores the
// hypervisor took, is doubted, naming the cause; the run's own processes
// (the generator, the components) are no other work.
func TestHostDoubts(t *testing.T) {
	c := SelfCheck{}.withDefaults()
	rs := func(busy, steal float64) []result.SeriesSummary {
		return []result.SeriesSummary{
			{Component: "host", Metric: "cpu_busy", Unit: "cores", Mean: busy},
			{Component: "host", Metric: "cpu_steal", Unit: "cores", Mean: steal},
			{Component: "generator", Metric: "cpu", Unit: "cores", Mean: 0.4},
			{Component: "relay", Metric: "cpu", Unit: "cores", Mean: 0.8},
			{Component: "relay", Metric: "memory", Unit: "bytes", Mean: 1 << 30},
		}
	}
	for _, tc := range []struct {
		name        string
		busy, steal float64
		want        string
	}{
		// The run's own 1.2 cores and a little noise: valid.
		{"quiet", 1.4, 0.05, ""},
		// 0.9 cores of something else on a 2-core host.
		{"busy elsewhere", 2.1, 0, "processes outside the run used 0.90 of its 2 cores"},
		// The hypervisor took a third of a core.
		{"steal", 1.3, 0.35, "the host's hypervisor took 0.35 of its 2 cores"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steal, other, ok := hostLoad(rs(tc.busy, tc.steal))
			require.True(t, ok)
			why := c.hostDoubts(result.SelfCheckResult{HostCores: 2, HostSteal: steal, HostOther: other})
			if tc.want == "" {
				assert.Empty(t, why)
			} else {
				require.Len(t, why, 1)
				assert.Contains(t, why[0], tc.want)
			}
		})
	}
	assert.Empty(t, SelfCheck{MaxHostOther: -1, MaxHostSteal: -1}.withDefaults().hostDoubts(result.SelfCheckResult{HostCores: 2, HostSteal: 2, HostOther: 2}), "disabled")
}

// On a real host: half its cores spun by processes the run did not start
// void a step that breached, naming them — the breach may be theirs — and
// leave a pass standing with the doubt noted: the target held its level
// with less of the machine.
func TestHostBusyElsewhereVoidsABreachNotAPass(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the host is measured on Linux")
	}
	for range (runtime.NumCPU() + 1) / 2 {
		hog := exec.Command("sh", "-c", "while :; do :; done")
		require.NoError(t, hog.Start())
		t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	}
	run := func(o Outcome) *StepResult {
		res, err := Run(context.Background(), Scenario{
			Workload:    &Arrivals{Mix: []Kind{{Name: "get", Weight: 1, Do: func(context.Context) Response { return Response{Outcome: o} }}}},
			Plan:        Levels(0, 3*time.Second, 20),
			Checks:      []Check{FailuresBelow("get", 0.01)},
			SampleEvery: 500 * time.Millisecond, SeriesEvery: -1,
			SelfCheck: SelfCheck{MaxCPU: -1, MaxScheduleLag: -1, MaxQueueWait: -1},
		})
		require.NoError(t, err)
		return res.Steps[0]
	}
	breach := run(HTTP5xx)
	assert.Equal(t, result.Invalid, breach.Verdict, "a breach on a busy host")
	assert.Contains(t, strings.Join(breach.InvalidReasons(), "\n"), "the host was busy with other work: processes outside the run used")
	assert.NotEmpty(t, breach.Violations, "the breach is kept")
	assert.Greater(t, breach.Self.HostOther, 0.4*float64(breach.Self.HostCores))

	pass := run(OK)
	assert.Equal(t, result.Pass, pass.Verdict, "a pass on a busy host stands")
	require.NotEmpty(t, pass.Self.Doubts)
	assert.Contains(t, pass.Self.Doubts[0], "processes outside the run used")
	assert.Empty(t, pass.InvalidReasons())
}
