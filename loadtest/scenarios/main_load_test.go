//go:build load

package scenarios

import (
	"testing"

	"github.com/headroom-dev/headroom/fixtures"
)

// TestMain prepares testcontainers for an engine with no registry and sweeps
// leftovers of killed runs before and after the scenarios.
func TestMain(m *testing.M) { fixtures.Main(m) }
