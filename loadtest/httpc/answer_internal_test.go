package httpc

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The event loop's parser reads an answer from pieces of any size — a byte
// at a time, as a slow socket may give it, or whole — to the same code,
// body length and framing.
func TestAnswerParser_Pieces(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		noBody bool
		code   int
		n      int64
		keep   bool
		atEOF  bool // complete only at the end of the connection
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello", false, 200, 5, true, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n3\r\nabc\r\n0\r\nTrailer: x\r\n\r\n", false, 200, 8, true, false},
		{"close", "HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno", false, 503, 2, false, false},
		{"until EOF", "HTTP/1.0 200 OK\r\n\r\nthe rest", false, 200, 8, false, true},
		{"head", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", true, 200, 0, true, false},
		{"no content", "HTTP/1.1 204 No Content\r\n\r\n", false, 204, 0, true, false},
		{"interim", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 1\r\n\r\nx", false, 201, 1, true, false},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", false, 200, 2, true, false},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 7, len(tt.answer)} {
			var p answerParser
			p.reset(tt.noBody)
			b := []byte(tt.answer)
			done := false
			for i := 0; i < len(b) && !done; i += size {
				used, d, err := p.feed(b[i:min(i+size, len(b))])
				require.NoError(t, err, "%s, pieces of %d", tt.name, size)
				assert.True(t, d || used == min(size, len(b)-i), "%s: a piece is used whole until the answer ends", tt.name)
				done = d
			}
			if tt.atEOF {
				require.False(t, done, "%s: not complete before the end of the connection", tt.name)
				done = p.eof()
			}
			require.True(t, done, "%s, pieces of %d", tt.name, size)
			assert.Equal(t, tt.code, p.code, tt.name)
			assert.Equal(t, tt.n, p.n, "%s, pieces of %d: body bytes", tt.name, size)
			assert.Equal(t, tt.keep, p.st.keepAlive, tt.name)
		}
	}
}

// What is not an answer fails as a protocol error; an answer cut short is
// not complete at the end of the connection.
func TestAnswerParser_Broken(t *testing.T) {
	for _, bad := range []string{
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 2x0 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
	} {
		var p answerParser
		p.reset(false)
		_, _, err := p.feed([]byte(bad))
		var pe *ProtocolError
		assert.ErrorAs(t, err, &pe, "%q", bad)
	}
	var p answerParser
	p.reset(false)
	_, done, err := p.feed([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"))
	require.NoError(t, err)
	assert.False(t, done)
	assert.False(t, p.eof(), "5 bytes of 10 are no answer")
	assert.True(t, p.started())
}
