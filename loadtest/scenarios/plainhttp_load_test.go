//go:build load

package scenarios

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// TestLoad_PlainHTTP checks that a plain HTTP service of this module,
// alone — no database, upstream or proxy — answers a mix of cheap reads
// and 1 ms units of work at a ladder of arrival rates with no failure and,
// at full size, reads under 20 ms at p95. It is the README's example of
// load-testing your own service.
func TestLoad_PlainHTTP(t *testing.T) {
	k := loadtest.NewKnobs(t)
	rates := k.Levels("RATES", "100,200,400", "50,100")
	hold := k.Duration("HOLD", "30s", "5s")

	stack := fixtures.Start(t,
		fixtures.WithTarget(fixtures.Service{
			Package: "./fixtures/testdata/testsvc", // your service's main package, in your module
			Env:     map[string]string{"ADDR": "{{.Addr}}"},
			Ready:   fixtures.HTTPReady("/readyz", 200),
		}),
		fixtures.WithDatabase(fixtures.NoDatabase), fixtures.WithoutUpstream(), fixtures.WithoutProxy())

	hc, err := httpc.New(httpc.Options{})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	read, err := hc.Prepare("GET", stack.URL+"/env?name=ADDR", nil, nil)
	require.NoError(t, err)
	work, err := hc.Prepare("GET", stack.URL+"/burn?ms=1", nil, nil)
	require.NoError(t, err)

	checks := []loadtest.Check{loadtest.FailuresBelow("", 0.001), stack.ComponentsUp()}
	if !testing.Short() { // latency bars only at full size: a short run on a shared machine would flake
		checks = append(checks, loadtest.LatencyBelow("read", 95, 20*time.Millisecond))
	}
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{ // the open model: arrivals by time, not by answers
			{Name: "read", Weight: 9, Do: hc.Func(read)},
			{Name: "work", Weight: 1, Do: hc.Func(work)},
		}},
		Plan:   loadtest.Levels(2*time.Second, hold, rates...),
		Checks: checks,
		Params: k.Params(),
	}))
	if err := res.Err(); err != nil { // breaches, invalid steps, regressions: the one exit
		t.Error(err)
	}
}
