//go:build load

package scenarios

import (
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
