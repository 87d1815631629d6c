package mockupstream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestStart(t *testing.T) {
	loc, err := mockupstream.Start(mockupstream.Config{Behavior: instant()})
	require.NoError(t, err)
	assert.Contains(t, loc.URL, "http://127.0.0.1:")
	require.NoError(t, loc.Client.Health(t.Context()))
	require.NoError(t, loc.Close())
	require.NoError(t, loc.Close(), "Close is idempotent")
	assert.Error(t, loc.Client.Health(t.Context()), "stopped")

	_, err = mockupstream.Start(mockupstream.Config{Addr: "127.0.0.1:-1"})
	assert.Error(t, err)
}
