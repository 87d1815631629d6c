package mcp_test

import (
	"context"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// One modeled user of an MCP gateway: handshake, tool listing, a call, and
// the notification stream held for the run. hc and the group are shared by
// all users; each user has its own Client.
func Example() {
	ctx := context.Background()
	hc, _ := httpc.New(httpc.Options{MaxConnsPerHost: 512})
	url := "http://127.0.0.1:8080/mcp"
	var sink loadtest.Sink // a *loadtest.Recorder in a scenario
	streams, _ := sse.NewGroup(mcp.NotificationConfig(hc, url, sink))

	user := func(i int, token string) {
		c, err := mcp.New(hc, mcp.Options{URL: url, Token: token, ProtocolVersion: "2025-06-18",
			Header: []httpc.Header{httpc.ForwardedFor(i)}})
		if err != nil {
			panic(err)
		}
		if r := c.Initialize(ctx); r.Outcome != loadtest.OK {
			return
		}
		s := c.OpenNotifications(ctx, streams)
		tools, r := c.ListTools(ctx)
		if r.Outcome != loadtest.OK || len(tools) == 0 {
			return
		}
		if _, r := c.CallTool(ctx, tools[0].Name, map[string]any{"q": "hello"}); r.Outcome == loadtest.OK || r.Outcome == loadtest.AppError {
			s.Expect(1) // the gateway announces every completed call on the stream
		}
	}
	_ = user
	// No Output line: this example needs a running gateway.
}
