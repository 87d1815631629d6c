package loadtest

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseProcStat(t *testing.T) {
	const stat = "cpu  100 5 40 800 10 2 3 40 0 0\ncpu0 50 2 20 400 5 1 1 20 0 0\ncpu1 50 3 20 400 5 1 2 20 0 0\nintr 1 2 3\n"
	ht, ok := parseProcStat(bufio.NewScanner(strings.NewReader(stat)))
	require.True(t, ok)
	assert.Equal(t, hostTimes{busy: 145, steal: 40, total: 1000, cpus: 2}, ht)
	_, ok = parseProcStat(bufio.NewScanner(strings.NewReader("intr 1\n")))
	assert.False(t, ok)
}
