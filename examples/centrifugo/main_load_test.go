//go:build load

package centrifugo

import (
	"testing"

	"github.com/headroom-dev/headroom/fixtures"
)

// TestMain prepares testcontainers for an engine with no registry and sweeps
// what killed runs left behind.
func TestMain(m *testing.M) { fixtures.Main(m) }
