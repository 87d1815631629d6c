package sse

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDechunker(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		done    bool
		wantErr string
	}{
		// Two chunks, then more to come.
		{"open", "5\r\nhello\r\n1\r\n!\r\n", "hello!", false, ""},
		// The last chunk ends the body.
		{"end", "3\r\nabc\r\n0\r\n\r\n", "abc", true, ""},
		// Trailers after the last chunk.
		{"trailer", "3\r\nabc\r\n0\r\nX-T: 1\r\n\r\n", "abc", true, ""},
		// Chunk extensions and upper-case hex.
		{"ext", "A;name=v\r\n0123456789\r\n", "0123456789", false, ""},
		// Bare LF line endings are tolerated.
		{"lf", "2\nab\n", "ab", false, ""},
		// A size that is not hex.
		{"bad-size", "zz\r\n", "", false, "malformed chunk size"},
		// Data not followed by CRLF.
		{"bad-crlf", "2\r\nabc\r\n", "ab", false, "not followed by CRLF"},
	}
	for _, tt := range tests {
		t.Run("case="+tt.name, func(t *testing.T) {
			for split := 0; split <= len(tt.in); split++ {
				var d dechunker
				var got []byte
				var done bool
				var err error
				for _, part := range []string{tt.in[:split], tt.in[split:]} {
					if err != nil || done {
						break
					}
					var out []byte
					out, done, err = d.decode([]byte(part))
					got = append(got, out...)
				}
				if tt.wantErr != "" {
					require.ErrorContains(t, err, tt.wantErr, "split at %d", split)
					continue
				}
				require.NoError(t, err, "split at %d", split)
				assert.Equal(t, tt.want, string(got), "split at %d", split)
				assert.Equal(t, tt.done, done, "split at %d", split)
			}
		})
	}
}
