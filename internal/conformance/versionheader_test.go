package conformance

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// send sends one request to url with the bearer token (none when "") and
// the MCP-Protocol-Version header, and returns the answer's status; the
// body of a POST's answer is read.
func send(t *testing.T, method, url, token, version, body string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(testContext(t), method, url, strings.NewReader(body))
	require.NoError(t, err)
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set(versionHeader, version)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	if method == http.MethodPost {
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
	}
	// A stream that opened is closed unread.
	return resp.StatusCode
}

// TestVersionHeader_Unsupported sends the same requests to an SDK server,
// the relay and the mock upstream, and proves that each refuses a request
// whose MCP-Protocol-Version names a revision it does not speak, as the SDK
// server does: "If the server receives a request with an invalid or
// unsupported MCP-Protocol-Version, it MUST respond with 400 Bad Request"
// (transports, 2025-06-18 and 2025-11-25). The same request naming a
// revision the server speaks is accepted, so the 400 is the header's. The
// notification stream's GET is checked too where there is one.
func TestVersionHeader_Unsupported(t *testing.T) {
	_, mock := startUpstream(t, false)
	servers := []struct {
		name, url, token string
		stream           bool // GET opens a notification stream
	}{
		{"sdk", startSDKServer(t, nil, nil).URL, "", true},
		{"relay", startRelay(t, connector{"good", mock}), relayToken, true},
		{"mockupstream", mock, "", false},
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"conformance","version":"1"}}}`
	for _, s := range servers {
		t.Run("server="+s.name, func(t *testing.T) {
			assert.Equal(t, http.StatusOK, send(t, http.MethodPost, s.url, s.token, "2025-06-18", initialize), "a revision the server speaks")
			assert.Equal(t, http.StatusBadRequest, send(t, http.MethodPost, s.url, s.token, "1999-01-01", initialize), "a revision it does not speak")
			if s.stream {
				assert.Equal(t, http.StatusBadRequest, send(t, http.MethodGet, s.url, s.token, "1999-01-01", ""), "the stream, naming a revision the server does not speak")
			}
		})
	}
}

// TestVersionHeader_Stateless proves that the relay accepts the stateless
// revision in MCP-Protocol-Version, as a stateless SDK server does, on the
// same server/discover request that names a revision neither speaks and is
// refused with 400; the relay's GET stream accepts the revision too (the
// SDK's stateless server has no GET stream).
func TestVersionHeader_Stateless(t *testing.T) {
	_, mock := startUpstream(t, false)
	servers := []struct{ name, url, token string }{
		{"sdk", startSDKServer(t, nil, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}).URL, ""},
		{"relay", startRelay(t, connector{"good", mock}), relayToken},
	}
	discover := func(rev string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + rev + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	for _, s := range servers {
		t.Run("server="+s.name, func(t *testing.T) {
			a := postRPC(t, s.url, s.token, discover(statelessRevision), versionHeader, statelessRevision, "Mcp-Method", "server/discover")
			assert.Equal(t, http.StatusOK, a.Status, "the stateless revision: %s", a.Body)
			assert.Contains(t, string(a.Result["supportedVersions"]), `"`+statelessRevision+`"`, "%s", a.Body)
			a = postRPC(t, s.url, s.token, discover("2099-01-01"), versionHeader, "2099-01-01", "Mcp-Method", "server/discover")
			assert.Equal(t, http.StatusBadRequest, a.Status, "a revision it does not speak: %s", a.Body)
			if s.name == "relay" {
				assert.Equal(t, http.StatusOK, send(t, http.MethodGet, s.url, s.token, statelessRevision, ""), "the stream, naming the stateless revision")
			}
		})
	}
}
