package relayload_test

import (
	"os"
	"testing"

	"github.com/headroom-dev/headroom/internal/childserver"
)

// The memory benchmark's stand-in gateway runs in another process, so that
// the generator's MemStats, RSS, CPU and descriptors are its own.
func TestMain(m *testing.M) {
	childserver.Main(map[string]childserver.Serve{standInName: serveStandIn})
	os.Exit(m.Run())
}
