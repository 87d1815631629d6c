package mockupstream_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/headroom-dev/headroom/mockupstream"
)

// A test starts an upstream, breaks it mid-run, checks that the load reached
// it, and restores it.
func ExampleClient() {
	up, err := mockupstream.Start(mockupstream.Config{Behavior: mockupstream.Envelope()})
	if err != nil {
		panic(err)
	}
	defer up.Close()
	ctx := context.Background()

	// Every call now fails with a 503 at once.
	_ = up.Client.UpdateBehavior(ctx, func(b *mockupstream.Behavior) {
		b.Call = mockupstream.Latency{}
		b.Faults.HTTP5xx = 1
	})
	for i := range 3 {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"tool_01"}}`, i)
		resp, err := http.Post(up.URL+"/mcp", "application/json", strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		fmt.Println(resp.Status)
	}
	s, _ := up.Client.Stats(ctx)
	fmt.Println("served", s.Served, "http_5xx", s.ByOutcome["http_5xx"])

	_ = up.Client.Reset(ctx) // the envelope again, counters zeroed
	// Output:
	// 503 Service Unavailable
	// 503 Service Unavailable
	// 503 Service Unavailable
	// served 3 http_5xx 3
}
