package server

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewFrame(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.FixedZone("x", 3600))
	tests := []struct {
		name    string
		payload string
		want    map[string]any // fields of the data line beyond the fixed ones
	}{
		// A JSON object payload: its fields are spliced in.
		{name: "object", payload: `{"tool":"a__b","outcome":"ok"}`, want: map[string]any{"tool": "a__b", "outcome": "ok"}},
		// An empty object adds nothing.
		{name: "empty_object", payload: `{}`, want: map[string]any{}},
		// Anything else is carried as a string.
		{name: "text", payload: `not json`, want: map[string]any{"payload": "not json"}},
	}
	for _, tc := range tests {
		t.Run("payload="+tc.name, func(t *testing.T) {
			f := newFrame(event{ID: 42, WorkspaceID: 7, UserID: 9, Kind: "call", Payload: tc.payload, WrittenAt: at})
			lines := strings.Split(string(f.raw), "\n")
			require.Len(t, lines, 5)
			assert.Equal(t, "id: 42", lines[0])
			assert.Equal(t, "event: call", lines[1])
			assert.Equal(t, []string{"", ""}, lines[3:], "ends with a blank line")
			data, ok := strings.CutPrefix(lines[2], "data: ")
			require.True(t, ok)
			var got map[string]any
			require.NoError(t, json.Unmarshal([]byte(data), &got), data)
			want := map[string]any{"id": 42.0, "workspace_id": 7.0, "user_id": 9.0, "kind": "call",
				"written_at": "2026-03-04T04:06:07.123456000Z"}
			for k, v := range tc.want {
				want[k] = v
			}
			assert.Equal(t, want, got)
			parsed, err := time.Parse(time.RFC3339Nano, got["written_at"].(string))
			require.NoError(t, err)
			assert.True(t, parsed.Equal(at))
			assert.Equal(t, strconv.FormatInt(int64(len(f.raw)), 16)+"\r\n"+string(f.raw)+"\r\n", string(f.chunk), "one HTTP/1.1 chunk")
		})
	}
}
