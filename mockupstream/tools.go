package mockupstream

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Tool is one entry of a tools/list answer.
type Tool struct {
	// Name is the tool's name: "tool_01" … "tool_20" for 20 tools (zero
	// padded to the width of the count, at least two digits).
	Name string `json:"name"`
	// Description says what the mock tool does.
	Description string `json:"description"`
	// InputSchema is the JSON Schema of the tool's arguments.
	InputSchema json.RawMessage `json:"inputSchema"`
}

const toolSchema = `{"type":"object","properties":{"query":{"type":"string","description":"Free text; the mock ignores it."},"limit":{"type":"integer","minimum":1,"description":"Ignored."}},"required":["query"]}`

// Tools returns the tools a server with count tools lists.
func Tools(count int) []Tool {
	width := max(2, len(strconv.Itoa(count)))
	tools := make([]Tool, count)
	for i := range tools {
		tools[i] = Tool{
			Name:        ToolName(i+1, count, width),
			Description: fmt.Sprintf("Mock tool %d of %d: answers after the configured latency with text of the configured size.", i+1, count),
			InputSchema: json.RawMessage(toolSchema),
		}
	}
	return tools
}

// ToolName returns the name of tool i (1-based) of count tools; width 0
// picks the default width.
func ToolName(i, count, width int) string {
	if width == 0 {
		width = max(2, len(strconv.Itoa(count)))
	}
	return fmt.Sprintf("tool_%0*d", width, i)
}

// toolsJSON returns the JSON of the tools/list result {"tools":[…]}.
func toolsJSON(count int) []byte {
	b, err := json.Marshal(struct {
		Tools []Tool `json:"tools"`
	}{Tools(count)})
	if err != nil {
		panic(err) // static types: cannot fail
	}
	return b
}

// toolIndex returns the 1-based index of the tool named name among count
// tools, or 0 when there is none.
func toolIndex(name string, count int) int {
	width := max(2, len(strconv.Itoa(count)))
	if len(name) != len("tool_")+width || name[:5] != "tool_" {
		return 0
	}
	i, err := strconv.Atoi(name[5:])
	if err != nil || i < 1 || i > count {
		return 0
	}
	return i
}
