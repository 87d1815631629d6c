package loadtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestGoTestCommand(t *testing.T) {
	cmd := goTestCommand([]string{"/tmp/x.test", "-test.paniconexit0", "-test.run=TestLoad_Smoke/users=50", "-test.short=true", "-test.timeout=10m0s", "-loadtest.update"})
	assert.Contains(t, cmd, "go test")
	assert.Contains(t, cmd, "-run=TestLoad_Smoke/users=50 -short=true -timeout=10m0s -loadtest.update")
	assert.NotContains(t, cmd, "paniconexit0")
}

// TestCommandLineOfAProgram: outside a test binary (headroom run) the
// command is the program's own arguments, quoted for a shell.
func TestCommandLineOfAProgram(t *testing.T) {
	cmd := commandLine([]string{"/usr/local/bin/headroom", "run", "-url", "http://127.0.0.1:8080/x?a=1&b=2", "-rates", "50,100"}, false)
	assert.Equal(t, "headroom run -url 'http://127.0.0.1:8080/x?a=1&b=2' -rates 50,100", cmd)
	assert.True(t, strings.HasPrefix(commandLine([]string{"/tmp/x.test", "-test.run=X"}, true), "go test "))
}
