package mockupstream_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestServer_AdminChangeAppliesToNextRequest(t *testing.T) {
	for _, hold := range holdModes {
		t.Run("hold="+string(hold), func(t *testing.T) {
			loc := start(t, instant(), hold)
			ctx := t.Context()
			url := loc.URL + "/mcp"
			c := newClient(10 * time.Second)

			var res callResult
			require.NoError(t, json.Unmarshal(rpc(t, c, url, toolCall(1, "tool_01")).Result, &res))
			assert.False(t, res.IsError)

			// Every call a tool error, from the next request on.
			require.NoError(t, loc.Client.UpdateBehavior(ctx, func(b *mockupstream.Behavior) { b.ToolErrors = 1 }))
			require.NoError(t, json.Unmarshal(rpc(t, c, url, toolCall(2, "tool_01")).Result, &res))
			assert.True(t, res.IsError)
			assert.Contains(t, res.Content[0].Text, "mockupstream: ")

			// Broken: every request a 502, slowed by 20 ms.
			b := instant()
			b.Faults = mockupstream.Faults{HTTP5xx: 1, Status: 502}
			b.Call = mockupstream.Latency{Median: ms(20)}
			require.NoError(t, loc.Client.SetBehavior(ctx, b))
			t0 := time.Now()
			status, body := post(t, c, url, toolCall(3, "tool_01"))
			assert.Equal(t, http.StatusBadGateway, status)
			assert.Contains(t, string(body), "injected HTTP 502")
			assert.GreaterOrEqual(t, time.Since(t0), 20*time.Millisecond, "a fault comes after the latency")

			// Restored.
			require.NoError(t, loc.Client.Reset(ctx))
			require.NoError(t, json.Unmarshal(rpc(t, c, url, toolCall(4, "tool_01")).Result, &res))
			assert.False(t, res.IsError)
			s, err := loc.Client.Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(1), s.Served, "reset zeroed the counters")
		})
	}
}

func TestServer_AdminRejectsBadBehavior(t *testing.T) {
	loc := start(t, instant(), mockupstream.HoldPark)
	before, err := loc.Client.Behavior(t.Context())
	require.NoError(t, err)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"bad=p95", `{"call":{"median":"2s","p95":"1s"}}`, "call.p95"},              // p95 below median
		{"bad=fraction", `{"faults":{"reset":1.5}}`, "faults.reset"},                // fraction above 1
		{"bad=duration", `{"list":{"median":"later"}}`, "list.median"},              // not a duration
		{"bad=unknown field", `{"latency":"1s"}`, `unknown field "latency"`},        // typo
		{"bad=json", `{"call":`, "behavior JSON"},                                   // truncated
		{"bad=negative", `{"initialize":{"median":-3}}`, "initialize.median"},       // negative ms
		{"bad=type", `{"sizes":[{"weight":"heavy"}]}`, "sizes.weight"},              // wrong type
		{"bad=status", `{"faults":{"http_5xx":0.1,"status":200}}`, "faults.status"}, // not 5xx
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(loc.URL+"/admin/behavior", "application/json", strings.NewReader(tc.body))
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			var e struct{ Error string }
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
			assert.Contains(t, e.Error, tc.want)
		})
	}
	after, err := loc.Client.Behavior(t.Context())
	require.NoError(t, err)
	assert.Equal(t, before, after, "a refused behaviour changes nothing")
}
