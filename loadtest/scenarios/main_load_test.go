//go:build load

package scenarios

import (
	"os"
	"testing"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/report"
)

// TestMain has every scenario leave an HTML report beside its JSON result,
// then prepares testcontainers for an engine with no registry and sweeps
// leftovers of killed runs before and after the scenarios.
func TestMain(m *testing.M) {
	loadtest.RegisterWriter("html", report.WriteHTML)
	fixtures.Main(m)
}

// besideOthers lets a scenario whose -short verdicts rest on correctness
// (no request failed, every stream held, the knee's probes as planned,
// statements counted) rather than speed run beside another one in a
// -short run: go test runs such tests two at a time (GOMAXPROCS here)
// once the serial ones — the studies, whose readings compare speeds, and
// the orchestrator, whose missions must finish within the hold — are done.
// A -short scenario waits on its holds, ramps and containers, not on the
// CPU (the whole -short suite used 12% of the generator's two cores
// here), so two at once take little more than the longer of them.
// LOADTEST_SERIAL=1 runs every scenario alone; full-size runs always do.
func besideOthers(t *testing.T) {
	if testing.Short() && os.Getenv("LOADTEST_SERIAL") == "" {
		t.Parallel()
	}
}

// deployedDB names the database of a deployed system (fixtures.Deployed):
// its own, whichever it is; subtests "db=deployed".
const deployedDB fixtures.Database = "deployed"

// databases returns the databases a scenario runs on: fixtures.Databases,
// or against a deployed system its own alone.
func databases(t *testing.T) []fixtures.Database {
	if fixtures.Deployed() {
		return []fixtures.Database{deployedDB}
	}
	return fixtures.Databases(t)
}

// notDeployed skips a scenario that must configure its target — start it
// with a fault, a posture, so many replicas, sample its process — when
// the scenarios load a deployed system (fixtures.TargetURLEnv) instead.
func notDeployed(t *testing.T, why string) {
	t.Helper()
	if fixtures.Deployed() {
		t.Skipf("%s is set: this scenario %s, which a deployed system does not let it do; unset it to run the scenario on its own stack", fixtures.TargetURLEnv, why)
	}
}
