package httpc_test

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// rawAnswerServer answers the first request of every connection with
// answer, bytes as they are, then closes the connection.
func rawAnswerServer(t *testing.T, answer string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				if n, _ := c.Read(buf); n > 0 {
					_, _ = io.WriteString(c, answer)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/"
}

// Success means an answer: a redirect the client does not follow is no
// success, and a request can require its status and a body.
func TestExpectSuccessMeansAnAnswer(t *testing.T) {
	const (
		redirect   = "HTTP/1.1 302 Found\r\nLocation: http://example.com/\r\nContent-Length: 0\r\n\r\n"
		emptyLen   = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
		emptyClose = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
		emptyChunk = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n"
		created    = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok"
		body       = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	)
	for _, engine := range []httpc.Options{{}, {NetHTTP: true}} {
		name := map[bool]string{false: "lean", true: "net/http"}[engine.NetHTTP]
		c := newClient(t, engine)
		for _, tc := range []struct {
			answer string
			expect httpc.Expect
			want   loadtest.Outcome
			why    string
		}{
			{redirect, httpc.Expect{}, loadtest.HTTP3xx, "a redirect not followed is no answer"},
			{redirect, httpc.Expect{Status: []int{302}}, loadtest.OK, "unless expected"},
			{emptyLen, httpc.Expect{}, loadtest.OK, "an empty 200 is an answer by default"},
			{emptyLen, httpc.Expect{MinBytes: 1}, loadtest.AppError, "not when a body is required"},
			{emptyClose, httpc.Expect{MinBytes: 1}, loadtest.AppError, "closed before any body"},
			{emptyChunk, httpc.Expect{MinBytes: 1}, loadtest.AppError, "an empty chunked body"},
			{created, httpc.Expect{Status: []int{200}}, loadtest.AppError, "another 2xx than expected"},
			{body, httpc.Expect{Status: []int{200, 204}, MinBytes: 2}, loadtest.OK, "as expected"},
			{"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n", httpc.Expect{Status: []int{200}}, loadtest.HTTP5xx, "a 5xx keeps its class"},
		} {
			req, err := c.Prepare("GET", rawAnswerServer(t, tc.answer), nil, nil)
			require.NoError(t, err)
			resp := c.Do(t.Context(), req.WithExpect(tc.expect))
			assert.Equal(t, tc.want, resp.Outcome, "%s: %s (%q): %v", name, tc.why, tc.answer, resp.Err)
			if tc.want == loadtest.AppError {
				assert.Error(t, resp.Err, "%s: %s: the sample error says why", name, tc.why)
			}
		}
	}
}
