package loadtest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// leakySampler reports a target whose memory grows by leak per request
// served and whose goroutines do too when goroutines is set, beside a
// database whose memory grows by dbGrowth per request (its data).
type leakySampler struct {
	served         *atomic.Int64
	leak, dbGrowth float64
	goroutines     bool
}

func (s leakySampler) Sample(context.Context, time.Time) ([]loadtest.Measurement, error) {
	n := float64(s.served.Load())
	ms := []loadtest.Measurement{
		{Component: "svc", Metric: "memory", Unit: "bytes", Value: 50<<20 + s.leak*n, Limit: 512 << 20},
		{Component: "db", Metric: "memory", Unit: "bytes", Value: 80<<20 + s.dbGrowth*n},
		{Component: "svc", Metric: "goroutines", Unit: "count", Value: 40},
	}
	if s.goroutines {
		ms[2].Value += n / 10
	}
	return ms, nil
}

func soakRun(t *testing.T, s leakySampler) *loadtest.Result {
	return soakRunMatters(t, s, 0)
}

// soakRunMatters is soakRun with memory growth slower than matters bytes
// an hour no leak (Step.LeakMatters).
func soakRunMatters(t *testing.T, s leakySampler, matters float64) *loadtest.Result {
	served := s.served
	plan := loadtest.Soak(100, time.Second, 60*time.Second)
	plan.Steps[0].LeakMatters = matters
	return run(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: func(ctx context.Context) loadtest.Response {
			served.Add(1)
			return sleeper(time.Millisecond)(ctx)
		}}}},
		Plan:        plan,
		SampleEvery: time.Second,
		Samplers:    []loadtest.Sampler{s},
		Checks:      []loadtest.Check{loadtest.FailuresBelow("get", 0.01)},
		System: result.System{Components: []result.Component{
			{Name: "svc", Role: result.RoleTarget}, {Name: "db", Role: result.RoleDatabase}}},
	})
}

// TestSoak: a target that keeps 4 KiB a request leaks 24 MiB over a
// minute's hold at 100 requests/s and fails the soak, named; the same
// growth in the database is reported and not judged; a target that keeps
// nothing passes; a goroutine leak is caught on its own.
func TestSoak(t *testing.T) {
	t.Run("leak", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			res := soakRun(t, leakySampler{served: new(atomic.Int64), leak: 4 << 10})
			require.Len(t, res.Steps, 1)
			s := res.Steps[0]
			for _, g := range s.Growth {
				t.Logf("%s", g)
			}
			assert.Equal(t, result.Fail, s.Verdict)
			require.Len(t, s.Violations, 1, "%v", s.Violations)
			assert.Contains(t, s.Violations[0], "no leak over the soak: svc memory: +")
			assert.Contains(t, s.Violations[0], ": a leak")
			require.Len(t, s.Growth, 3)
			assert.True(t, s.Growth[0].Leak && s.Growth[0].Judged)
			assert.InDelta(t, float64(4<<10*100*3600), s.Growth[0].PerHour, 0.05*float64(4<<10*100*3600), "4 KiB × 100 requests/s, per hour")
			assert.Contains(t, s.Growth[0].Day(), "its 512MiB limit in")
			require.Error(t, res.Err())
		})
	})
	// 4 KiB × 100 requests/s is about 1.4 GiB an hour: a leak where
	// 1 GiB/h matters, none where only 2 GiB/h does.
	t.Run("slower than what matters", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			res := soakRunMatters(t, leakySampler{served: new(atomic.Int64), leak: 4 << 10}, 2<<30)
			require.Len(t, res.Steps, 1)
			s := res.Steps[0]
			assert.Equal(t, result.Pass, s.Verdict, "%v", s.Violations)
			require.NotEmpty(t, s.Growth)
			assert.False(t, s.Growth[0].Leak)
			assert.Equal(t, float64(2<<30), s.Growth[0].Matters)
			assert.Contains(t, s.Growth[0].String(), "not surely as fast as the 2GiB/h that matters")

			res = soakRunMatters(t, leakySampler{served: new(atomic.Int64), leak: 4 << 10}, 1<<30)
			assert.Equal(t, result.Fail, res.Steps[0].Verdict)
		})
	})
	t.Run("database grows, not judged", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			res := soakRun(t, leakySampler{served: new(atomic.Int64), dbGrowth: 4 << 10})
			s := res.Steps[0]
			assert.Equal(t, result.Pass, s.Verdict, "%v", s.Violations)
			var db result.Growth
			for _, g := range s.Growth {
				if g.Component == "db" {
					db = g
				}
			}
			assert.True(t, db.Leak, "the growth is measured and reported")
			assert.False(t, db.Judged, "a database's growth is not judged")
		})
	})
	t.Run("steady", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			res := soakRun(t, leakySampler{served: new(atomic.Int64)})
			s := res.Steps[0]
			assert.Equal(t, result.Pass, s.Verdict, "%v", s.Violations)
			for _, g := range s.Growth {
				assert.False(t, g.Leak, "%s", g)
			}
			assert.Contains(t, res.Markdown(), "## Growth over the soak")
		})
	})
	t.Run("goroutines", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			res := soakRun(t, leakySampler{served: new(atomic.Int64), goroutines: true})
			s := res.Steps[0]
			assert.Equal(t, result.Fail, s.Verdict)
			require.Len(t, s.Violations, 1)
			assert.Contains(t, s.Violations[0], "svc goroutines")
		})
	})
}

func TestSoakTooShortForItsSampling(t *testing.T) {
	err := (&loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: sleeper(time.Millisecond)}}},
		Plan:     loadtest.Soak(10, 0, time.Minute),
	}).Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is a soak of 1m0s, too short to fit growth at a sample every 5s; hold it at least 1m30s, or sample more often (Scenario.SampleEvery = 3.3s)")
}
