package mockupstream_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestTools(t *testing.T) {
	for _, tc := range []struct {
		count       int
		first, last string
	}{
		{1, "tool_01", "tool_01"},     // at least two digits
		{20, "tool_01", "tool_20"},    // the envelope
		{150, "tool_001", "tool_150"}, // padded to the count's width
	} {
		t.Run("count="+tc.first+".."+tc.last, func(t *testing.T) {
			tools := mockupstream.Tools(tc.count)
			require.Len(t, tools, tc.count)
			assert.Equal(t, tc.first, tools[0].Name)
			assert.Equal(t, tc.last, tools[tc.count-1].Name)
			names := map[string]bool{}
			for _, tool := range tools {
				assert.False(t, names[tool.Name], "unique names")
				names[tool.Name] = true
				assert.True(t, json.Valid(tool.InputSchema))
			}
		})
	}
	assert.Empty(t, mockupstream.Tools(0))
}

func TestTools_CallNamesOnlyListedTools(t *testing.T) {
	b := instant()
	b.ToolCount = 3
	loc := start(t, b, mockupstream.HoldPark)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"tool_01", true},  // first
		{"tool_03", true},  // last
		{"tool_04", false}, // past the count
		{"tool_1", false},  // not padded as listed
		{"tool_00", false}, // zero
		{"tool_xx", false}, // not a number
	} {
		t.Run("tool="+tc.name, func(t *testing.T) {
			a := rpc(t, nil, loc.URL+"/mcp", toolCall(1, tc.name))
			if tc.ok {
				assert.Nil(t, a.Error)
			} else {
				require.NotNil(t, a.Error)
				assert.Equal(t, mockupstream.CodeInvalidParams, a.Error.Code)
			}
		})
	}
}
