package server

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAppendResult checks the serverInfo _meta a stateless-era result
// gets: spliced into the object, merged into a top-level _meta the result
// has (keeping a serverInfo already there), and nothing for the handshake
// era or for a result that is not an object.
func TestAppendResult(t *testing.T) {
	info := `{"name":"headroom-relay","version":"` + Version + `"}`
	tests := []struct {
		name, result, want string
		stateless          bool
	}{
		// The handshake era: as is.
		{name: "handshake", result: `{"tools":[]}`, want: `{"tools":[]}`},
		// An empty object gets the member alone.
		{name: "empty", result: `{ }`, want: `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `}}`, stateless: true},
		// Other members follow it.
		{name: "members", result: ` {"tools":[{"name":"a"}]}`, want: `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"tools":[{"name":"a"}]}`, stateless: true},
		// A _meta deeper down is not the result's: spliced all the same.
		{name: "nested_meta", result: `{"content":[{"type":"text","text":"x","_meta":{"k":1}}]}`,
			want: `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `},"content":[{"type":"text","text":"x","_meta":{"k":1}}]}`, stateless: true},
		// The result's own _meta gets serverInfo added.
		{name: "own_meta", result: `{"content":[],"_meta":{"k":1}}`,
			want: `{"_meta":{"io.modelcontextprotocol/serverInfo":` + info + `,"k":1},"content":[]}`, stateless: true},
		// A serverInfo the result names is kept.
		{name: "own_server_info", result: `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`,
			want: `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up"}}}`, stateless: true},
		// Not an object: as is.
		{name: "array", result: `[1]`, want: `[1]`, stateless: true},
	}
	for _, tc := range tests {
		t.Run("result="+tc.name, func(t *testing.T) {
			got := appendResult(nil, json.RawMessage(tc.result), tc.stateless)
			require.True(t, json.Valid(got), "%s", got)
			assert.JSONEq(t, tc.want, string(got))
			if !strings.Contains(tc.result, `"_meta"`) {
				assert.Equal(t, tc.want, string(got), "spliced byte for byte")
			}
		})
	}
}

// TestAppendResultDoesNotDecode checks that a large result is copied, not
// decoded: no allocation beyond the buffer it is appended to.
func TestAppendResultDoesNotDecode(t *testing.T) {
	result := []byte(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 1<<20) + `"}]}`)
	buf := make([]byte, 0, len(result)+len(serverInfoMember)+16)
	allocs := testing.AllocsPerRun(10, func() { buf = appendResult(buf[:0], result, true) })
	assert.Zero(t, allocs)
	assert.True(t, bytes.HasPrefix(buf, append([]byte{'{'}, serverInfoMember...)))
}

// TestListenFrames checks the frames a subscriptions/listen stream gets
// that a GET stream does not: the acknowledgment first, and on drain the
// request's result before the final frame.
func TestListenFrames(t *testing.T) {
	ack := listenAckFrame(`"s-1"`)
	assert.Equal(t, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\",\"params\":{\"notifications\":{},\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":\"s-1\"}}}\n\n: connected\n\n", string(ack.raw))
	assert.Equal(t, string(chunked(ack.raw)), string(ack.chunk))
	final := listenFinalFrame("12", shutdownFrame)
	assert.Equal(t, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":12,\"result\":{\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":12}}}\n\n"+string(shutdownFrame.raw), string(final.raw))
	assert.Equal(t, string(chunked(final.raw)), string(final.chunk))
}
