package report

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest"
)

// TestTestWritesHTML: a run leaves no HTML until the writer is registered
// (importing the package registers nothing); with
// loadtest.RegisterWriter("html", WriteHTML), as a TestMain does,
// loadtest.Test leaves the HTML report beside the result, with the run's
// timeline drawn.
func TestTestWritesHTML(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOADTEST_RESULTS_DIR", filepath.Join(dir, "results"))
	t.Setenv("LOADTEST_BASELINE_DIR", filepath.Join(dir, "baselines"))
	ok := func(ctx context.Context) loadtest.Response {
		time.Sleep(time.Millisecond)
		return loadtest.Response{Outcome: loadtest.OK}
	}
	run := func(t *testing.T) *loadtest.Result {
		return loadtest.Test(t, loadtest.Scenario{
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: ok}}},
			Plan:     loadtest.Levels(0, time.Second, 40),
			Checks:   []loadtest.Check{loadtest.Latency{Kind: "get", Percentile: 95, Bound: time.Second, MinSamples: 10}},
		})
	}
	t.Run("writer=none", func(t *testing.T) {
		run(t)
		jsonPath, _, err := files.ResultPaths(t.Name())
		require.NoError(t, err)
		require.FileExists(t, jsonPath)
		assert.NoFileExists(t, HTMLPath(jsonPath), "no writer registered, no HTML")
	})
	loadtest.RegisterWriter("html", WriteHTML)
	res := run(t)
	require.Len(t, res.Steps, 1)
	jsonPath, _, err := files.ResultPaths(t.Name())
	require.NoError(t, err)
	page, err := os.ReadFile(HTMLPath(jsonPath))
	require.NoError(t, err, "no HTML beside %s", jsonPath)
	s := string(page)
	assert.Contains(t, s, `id="fig-latency"`)
	assert.Contains(t, s, `id="fig-timeline-rates"`)
	assert.Contains(t, s, "SLO p95 &lt; 1s")
	assert.Contains(t, s, `data-verdict="`+string(res.Verdict)+`"`)
}
