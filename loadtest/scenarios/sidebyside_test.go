//go:build load

package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// fakeDeskRun is a helpdesk result whose steps are levels, each answering
// 10 requests/s per 10 agents (scale: twice as many).
func fakeDeskRun(factor float64, levels ...float64) *loadtest.Result {
	res := &loadtest.Result{Start: time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)}
	for i, l := range levels {
		res.Steps = append(res.Steps, &loadtest.StepResult{Index: i, Step: loadtest.Step{Level: l}, Verdict: result.Pass,
			Throughput: l * factor,
			Resources:  []result.SeriesSummary{{Component: "desk", Metric: "cpu", Unit: "cores", Mean: l / 100}}})
	}
	return res
}

// TestHelpdeskTables: the Standard-vs-Scale table runs level by level over
// the union of both ladders (idle first, a level only one ran shown as
// "–"), the live-vs-poll one is written only for a setup that ran both
// clients, and neither is written without both of its sides.
func TestHelpdeskTables(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOADTEST_RESULTS_DIR", dir)
	v := newVariants()
	v.add("standard/live", fakeDeskRun(1, 0, 20, 40))
	t.Run("one side", func(t *testing.T) { helpdeskTables(t, v, []string{"standard", "scale"}) })
	tables, _ := filepath.Glob(filepath.Join(dir, "*", "*"+report.TableSuffix))
	assert.Empty(t, tables, "one setup alone is no comparison")

	v.add("scale/live", fakeDeskRun(2, 0, 20, 40, 80))
	v.add("scale/poll", fakeDeskRun(3, 40))
	t.Run("both", func(t *testing.T) { helpdeskTables(t, v, []string{"standard", "scale"}) })
	tables, _ = filepath.Glob(filepath.Join(dir, "TestHelpdeskTables", "both", "*"+report.TableSuffix))
	require.Len(t, tables, 2, "standard_vs_scale and live_vs_poll")

	table := func(name string) string { // "name.short.table.json" in a -short run
		m, _ := filepath.Glob(filepath.Join(dir, "TestHelpdeskTables", "both", name+"*"+report.TableSuffix))
		require.Len(t, m, 1)
		return m[0]
	}
	tb, err := report.ReadTable(table("standard_vs_scale"))
	require.NoError(t, err)
	require.Len(t, tb.Rows, 4)
	assert.Equal(t, []string{"idle", "idle", "0.00 cores / –", "– / –", "idle", "0.00 cores / –", "– / –"}, tb.Rows[0])
	assert.Equal(t, "20/s, p95 –", tb.Rows[1][1])
	assert.Equal(t, "0.20 cores / –", tb.Rows[1][2])
	assert.Equal(t, "40/s, p95 –", tb.Rows[1][4])
	assert.Equal(t, []string{"80", "–", "–", "–", "160/s, p95 –", "0.80 cores / –", "– / –"}, tb.Rows[3])

	lp, err := report.ReadTable(table("live_vs_poll"))
	require.NoError(t, err)
	assert.Equal(t, []string{"", "scale, live (40 agents)", "scale, poll (40 agents)"}, lp.Header, "standard ran no poll client")
	assert.Equal(t, []string{"Requests/s, p95 of all", "80/s, p95 –", "120/s, p95 –"}, lp.Rows[0])
	_, err = os.Stat(strings.TrimSuffix(table("live_vs_poll"), report.TableSuffix) + ".csv")
	assert.NoError(t, err, "a CSV beside each table")
}

// fakeKnee is a knee search's result with no probes (so a lower bound):
// capacity, in users or arrivals per second, on a pod of cpus and memory
// bytes, at commit.
func fakeKnee(model string, capacity, cpus float64, memory int64, commit string) *loadtest.Result {
	res := &loadtest.Result{Schema: result.SchemaVersion, Start: time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC), Model: model, Capacity: capacity, Verdict: result.Pass}
	res.Environment.System.CPUs, res.Environment.System.Memory = cpus, memory
	res.Provenance.Commit = commit
	return res
}

// The era table sets each row's eras side by side, and says which pod
// they ran on: a figure of another pod, or of another commit, than most
// of the table's says so in its cell.
func TestEraTable(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOADTEST_RESULTS_DIR", dir)
	const mib = 1 << 20
	write := func(name string, res *loadtest.Result) {
		path, _, err := files.ResultPaths(name)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, res.WriteFile(path))
	}
	write("TestLoad_GatewayKnee/db=postgres/era=handshake", fakeKnee("users", 2250, 0.5, 64*mib, "aaaa"))
	write("TestLoad_GatewayKnee/db=postgres/era=stateless", fakeKnee("users", 2532, 0.5, 64*mib, "aaaa"))
	write("TestLoad_RateCeiling/kind=calls/db=postgres/era=handshake", fakeKnee("arrivals", 400, 0.5, 64*mib, "aaaa"))
	write("TestLoad_RateCeiling/kind=listings/db=postgres/era=stateless", fakeKnee("arrivals", 188, 1, 512*mib, "bbbb"))
	eraTable(t)

	m, _ := filepath.Glob(filepath.Join(dir, "TestLoad_GatewayKnee", "eras_db=postgres*"+report.TableSuffix))
	require.Len(t, m, 1, "one table for PostgreSQL; SQLite has no runs")
	tb, err := report.ReadTable(m[0])
	require.NoError(t, err)
	assert.Equal(t, []string{"Modeled users per pod", "≥ 2,250", "≥ 2,532"}, tb.Rows[0])
	assert.Equal(t, []string{"Tool calls /s", "≥ 400/s", "–"}, tb.Rows[1])
	assert.Equal(t, "–", tb.Rows[2][1])
	assert.True(t, strings.HasSuffix(tb.Rows[2][2], "188/s (at bbbb) (on 1 CPU / 512MiB)"), "another commit's and another pod's figure says so: %q", tb.Rows[2][2])
	assert.Contains(t, tb.Note, "One relay pod of 0.5 CPU / 64MiB unless a figure says otherwise")
}
