package mockupstream_test

import (
	"os"
	"testing"
)

// TestMain runs the test binary as the load client of the hold benchmarks
// when MOCKUPSTREAM_LOADCLIENT names a mode (see loadclient_test.go).
func TestMain(m *testing.M) {
	if mode := os.Getenv(loadClientEnv); mode != "" {
		os.Exit(runLoadClient(mode))
	}
	os.Exit(m.Run())
}
