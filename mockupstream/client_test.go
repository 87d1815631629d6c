package mockupstream_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestClient(t *testing.T) {
	loc := start(t, mockupstream.Envelope(), mockupstream.HoldPark)
	c := &mockupstream.Client{BaseURL: loc.URL + "/", HTTPClient: &http.Client{Timeout: 10 * time.Second}}
	ctx := t.Context()

	require.NoError(t, c.Health(ctx))
	b, err := c.Behavior(ctx)
	require.NoError(t, err)
	assert.NotZero(t, b.Seed, "the picked seed is reported")
	assert.Equal(t, mockupstream.Envelope().Call, b.Call)

	// Set, read back.
	want := mockupstream.Calibrated()
	want.Seed = 5
	require.NoError(t, c.SetBehavior(ctx, want))
	got, err := c.Behavior(ctx)
	require.NoError(t, err)
	want.Faults.Status, want.Faults.MaxHang = mockupstream.DefaultStatus, mockupstream.Duration(mockupstream.DefaultMaxHang)
	assert.Equal(t, want, got, "as set, with the defaults filled in")

	// Refused, with the field named; nothing changes.
	bad := want
	bad.Call.P95 = ms(1)
	err = c.SetBehavior(ctx, bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "400")
	assert.Contains(t, err.Error(), "call.p95")
	got, err = c.Behavior(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Update edits the behaviour in force.
	require.NoError(t, c.UpdateBehavior(ctx, func(b *mockupstream.Behavior) { b.ToolCount = 3 }))
	got, err = c.Behavior(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, got.ToolCount)
	assert.Equal(t, want.Call, got.Call)

	// Stats see load, Reset restores the start.
	rpc(t, nil, loc.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	s, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.ByMethod["ping"])
	require.NoError(t, c.Reset(ctx))
	s, err = c.Stats(ctx)
	require.NoError(t, err)
	assert.Zero(t, s.Served)
	got, err = c.Behavior(ctx)
	require.NoError(t, err)
	assert.Equal(t, b, got, "the starting behaviour, seed included")
}

func TestClient_Unreachable(t *testing.T) {
	c := &mockupstream.Client{BaseURL: "http://127.0.0.1:1"}
	_, err := c.Stats(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "/admin/stats")
}
