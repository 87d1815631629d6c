package httpc_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/headroom-dev/headroom/internal/childserver"
)

// The benchmarks' target runs in another process, so that getrusage in the
// benchmark process measures the generator alone.
func TestMain(m *testing.M) {
	childserver.Main(map[string]childserver.Serve{"http": childserver.HTTP})
	os.Exit(m.Run())
}

func startServerProcess(tb testing.TB) string { return childserver.Start(tb, "http") }

func gomaxprocs() int { return runtime.GOMAXPROCS(0) }
