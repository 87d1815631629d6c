package mockupstream_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestServer_HeldCallsKeepTheConnection(t *testing.T) {
	for _, hold := range holdModes {
		t.Run("hold="+string(hold), func(t *testing.T) {
			b := instant()
			b.Call = mockupstream.Latency{Median: ms(15)}
			loc := start(t, b, hold)
			c := newClient(10 * time.Second)
			reused := 0
			for i := range 5 {
				trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
					if info.Reused {
						reused++
					}
				}}
				req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), "POST", loc.URL+"/mcp", strings.NewReader(toolCall(i, "tool_01")))
				require.NoError(t, err)
				resp, err := c.Do(req)
				require.NoError(t, err)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, 200, resp.StatusCode)
			}
			assert.Equal(t, 4, reused, "one connection for five held calls")
		})
	}
}

func TestServer_PipelinedRequestsAnsweredInOrder(t *testing.T) {
	b := instant()
	b.Call = mockupstream.Latency{Median: ms(20)}
	loc := start(t, b, mockupstream.HoldPark)
	conn, err := net.Dial("tcp", loc.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	var reqs strings.Builder
	for i := 1; i <= 3; i++ {
		body := toolCall(i, "tool_01")
		fmt.Fprintf(&reqs, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
	_, err = io.WriteString(conn, reqs.String()) // all three before any answer
	require.NoError(t, err)
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	br := bufio.NewReader(conn)
	for i := 1; i <= 3; i++ {
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		var a rpcAnswer
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
		resp.Body.Close()
		assert.JSONEq(t, fmt.Sprint(i), string(a.ID))
	}
}

func TestServer_ConnectionCloseIsHonoured(t *testing.T) {
	b := instant()
	b.Call = mockupstream.Latency{Median: ms(5)}
	loc := start(t, b, mockupstream.HoldPark)
	conn, err := net.Dial("tcp", loc.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	body := toolCall(1, "tool_01")
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	all, err := io.ReadAll(conn) // ends only if the server closes
	require.NoError(t, err)
	assert.Contains(t, string(all), "Connection: close")
	assert.Contains(t, string(all), `"isError":false`)
}
