//go:build load

package grpcgreeter

import (
	"testing"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/report"
)

// TestMain has every scenario leave an HTML report beside its JSON result,
// then prepares testcontainers for an engine with no registry and sweeps
// what killed runs left behind.
func TestMain(m *testing.M) {
	loadtest.RegisterWriter("html", report.WriteHTML)
	fixtures.Main(m)
}
