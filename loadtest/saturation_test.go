package loadtest_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/internal/childserver"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// BenchmarkPastSaturation offers the generator twice the rate it can send
// and reports what it achieved as a fraction of its own maximum (goal ≥ 0.9),
// the share of arrivals dropped, the connections used (bounded by
// MaxInFlight) and the heap it grew. The maximum is measured first in the
// same run by a closed loop of the same concurrency over the same client.
func BenchmarkPastSaturation(b *testing.B) {
	const conc = 64
	addr := childserver.Start(b, "http")
	c, err := httpc.New(httpc.Options{MaxConnsPerHost: conc, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req, err := c.Prepare("GET", "http://"+addr+"/", nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	do := c.Func(req)

	for b.Loop() {
		// The generator's own maximum: conc workers in a closed loop.
		var n atomic.Int64
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var wg sync.WaitGroup
		start := time.Now()
		for range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					if do(ctx).Outcome == loadtest.OK {
						n.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		cancel()
		maxRate := float64(n.Load()) / time.Since(start).Seconds()

		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := loadtest.Run(context.Background(), loadtest.Scenario{
			Workload:  &loadtest.Arrivals{MaxInFlight: conc, Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: do}}},
			Plan:      loadtest.Ladder{Steps: []loadtest.Step{{Level: 2 * maxRate, Ramp: time.Second, Hold: 5 * time.Second}}},
			SelfCheck: loadtest.SelfCheck{MaxCPU: -1, MaxScheduleLag: -1},
		})
		if err != nil {
			b.Fatal(err)
		}
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		s := res.Steps[0]
		get := s.Kind("get")
		b.ReportMetric(maxRate, "max-req/s")
		b.ReportMetric(s.Throughput, "achieved-req/s")
		b.ReportMetric(s.Throughput/maxRate, "achieved/max")
		b.ReportMetric(get.Rate(loadtest.Dropped), "dropped-share")
		b.ReportMetric(float64(c.Stats().Open), "conns")
		b.ReportMetric(float64(int64(after.HeapInuse)-int64(before.HeapInuse))/(1<<20), "heap-growth-MiB")
	}
}
