package loadtest_test

import (
	"os"
	"testing"

	"github.com/headroom-dev/headroom/internal/childserver"
)

func TestMain(m *testing.M) {
	benchGenMain()
	childserver.Main(map[string]childserver.Serve{"http": childserver.HTTP})
	os.Exit(m.Run())
}
