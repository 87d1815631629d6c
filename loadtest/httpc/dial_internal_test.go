package httpc

import (
	"bytes"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandshakeConn_ReadsARecordAtATime: while aligned, reads of any size
// return a record's header, then its body (in pieces when the caller's
// buffer is short), never crossing into the next record; unaligned, a
// read returns what the connection has.
func TestHandshakeConn_ReadsARecordAtATime(t *testing.T) {
	record := func(typ byte, body int) []byte {
		return append([]byte{typ, 3, 3, byte(body >> 8), byte(body)}, bytes.Repeat([]byte{typ}, body)...)
	}
	var wire []byte
	wire = append(wire, record(22, 1200)...) // a ServerHello with a post-quantum key share
	wire = append(wire, record(20, 1)...)
	wire = append(wire, record(23, 0)...) // an empty record
	wire = append(wire, record(23, 3000)...)
	wire = append(wire, record(23, 40)...)

	client, server := net.Pipe()
	go func() {
		_, _ = server.Write(wire) // one write: the whole flight waits at once
		_ = server.Close()
	}()
	c := &handshakeConn{Conn: client, aligned: true}
	var sizes []int
	var got []byte
	buf := make([]byte, 2048)
	for len(got) < len(wire)-45 {
		n, err := c.Read(buf)
		require.NoError(t, err)
		sizes = append(sizes, n)
		got = append(got, buf[:n]...)
	}
	assert.Equal(t, []int{5, 1200, 5, 1, 5, 5, 2048, 952}, sizes, "header, body, header, body, … — a long body in buffer-sized pieces")
	assert.Equal(t, wire[:len(got)], got, "the bytes, in order")

	c.aligned = false
	rest, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, wire[len(got):], rest, "unaligned: the rest as it comes")
}
