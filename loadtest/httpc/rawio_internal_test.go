//go:build linux

package httpc

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On Linux the lean engine's connections read and write with raw system
// calls; these checks hold them to a net.Conn's contract: every byte
// written (waiting for room in the socket when it is full), every byte
// read, end of stream, deadlines and closing.
func TestRawConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	dial := func(t *testing.T) (net.Conn, net.Conn) {
		d := &Dialer{}
		c, err := d.Dial(t.Context(), ln.Addr().String(), false, "")
		require.NoError(t, err)
		s, err := ln.Accept()
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
		if !raceEnabled {
			require.IsType(t, &rawConn{}, c, "Dial gives the raw connection on Linux")
		}
		c = rawIO(c)
		require.IsType(t, &rawConn{}, c)
		// A case that goes wrong fails at the deadline, never hangs.
		require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
		require.NoError(t, s.SetDeadline(time.Now().Add(30*time.Second)))
		return c, s
	}

	t.Run("case=large-write", func(t *testing.T) {
		// 32 MiB cannot fit in the socket's buffers: the write fills them,
		// gets EAGAIN, waits for room and goes on while the peer reads
		// slowly.
		c, s := dial(t)
		data := bytes.Repeat([]byte("0123456789abcdef"), 2<<20)
		got := make(chan [32]byte, 1)
		go func() {
			h := sha256.New()
			buf := make([]byte, 64<<10)
			for {
				n, err := s.Read(buf)
				h.Write(buf[:n])
				if err != nil {
					break
				}
				time.Sleep(50 * time.Microsecond)
			}
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			got <- sum
		}()
		n, err := c.Write(data)
		require.NoError(t, err)
		assert.Equal(t, len(data), n)
		require.NoError(t, c.(*rawConn).CloseWrite())
		assert.Equal(t, sha256.Sum256(data), <-got, "the peer read every byte, in order")
	})

	t.Run("case=read-then-eof", func(t *testing.T) {
		c, s := dial(t)
		_, err := c.Write([]byte("ping"))
		require.NoError(t, err)
		buf := make([]byte, 4)
		_, err = io.ReadFull(s, buf)
		require.NoError(t, err)
		go func() {
			time.Sleep(20 * time.Millisecond) // the client waits in the poller first
			_, _ = s.Write([]byte("pong"))
			_ = s.Close()
		}()
		all, err := io.ReadAll(c)
		require.NoError(t, err, "end of stream is io.EOF, which ReadAll takes for the end")
		assert.Equal(t, "pong", string(all))
		n, err := c.Read(buf)
		assert.Zero(t, n)
		assert.Equal(t, io.EOF, err)
	})

	t.Run("case=send", func(t *testing.T) {
		// A request written by send, then the answer waited for without a
		// read first: it must be seen whether it comes later or at once.
		c, s := dial(t)
		r := c.(*rawConn)
		buf := make([]byte, 4)
		for _, delay := range []time.Duration{0, 20 * time.Millisecond, 0, 0} {
			go func() {
				if _, err := io.ReadFull(s, buf[:4]); err == nil {
					time.Sleep(delay)
					_, _ = s.Write([]byte("pong"))
				}
			}()
			require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
			n, err := r.send([]byte("ping"))
			require.NoError(t, err)
			require.Equal(t, 4, n)
			got := make([]byte, 4)
			_, err = io.ReadFull(c, got)
			require.NoError(t, err, "answer after %v", delay)
			assert.Equal(t, "pong", string(got))
		}
	})

	t.Run("case=send-to-closed", func(t *testing.T) {
		// The server closed the idle connection before the request: the
		// wait after send ends with the connection's end (the reset the
		// request draws), not at the deadline.
		c, s := dial(t)
		require.NoError(t, s.Close())
		time.Sleep(20 * time.Millisecond) // its FIN has arrived, unread
		require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
		start := time.Now()
		_, err := c.(*rawConn).send([]byte("GET / HTTP/1.1\r\n\r\n"))
		if err == nil {
			_, err = c.Read(make([]byte, 10))
		}
		require.Error(t, err)
		assert.True(t, isClosedConn(err), "a closed connection, safe to resend on: %v", err)
		assert.Less(t, time.Since(start), 2*time.Second, "noticed at once, not at the deadline")
	})

	t.Run("case=send-large", func(t *testing.T) {
		// More than the socket holds while the peer reads nothing yet:
		// send writes what fits and says so, rather than wait for an
		// answer with the rest unwritten. (Were the peer reading all the
		// while, the whole request could go out, and send would rightly
		// wait for the answer.)
		c, s := dial(t)
		data := bytes.Repeat([]byte("x"), 32<<20)
		n, err := c.(*rawConn).send(data)
		require.NoError(t, err)
		require.Greater(t, n, 0)
		require.Less(t, n, len(data))
		done := make(chan int64, 1)
		go func() {
			n, _ := io.Copy(io.Discard, s)
			done <- n
		}()
		m, err := c.Write(data[n:])
		require.NoError(t, err)
		require.NoError(t, c.(*rawConn).CloseWrite())
		assert.Equal(t, int64(len(data)), <-done)
		assert.Equal(t, len(data), n+m)
	})

	t.Run("case=deadline", func(t *testing.T) {
		c, _ := dial(t)
		require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Millisecond)))
		start := time.Now()
		_, err := c.Read(make([]byte, 10))
		require.Error(t, err)
		assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout())
		assert.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("case=reset", func(t *testing.T) {
		c, s := dial(t)
		require.NoError(t, s.(*net.TCPConn).SetLinger(0))
		require.NoError(t, s.Close()) // RST
		time.Sleep(20 * time.Millisecond)
		_, err := c.Read(make([]byte, 10))
		require.Error(t, err)
		assert.True(t, isClosedConn(err), "a reset reads as a closed connection: %v", err)
	})

	t.Run("case=closed", func(t *testing.T) {
		c, _ := dial(t)
		errc := make(chan error, 1)
		go func() {
			_, err := c.Read(make([]byte, 10))
			errc <- err
		}()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, c.Close())
		select {
		case err := <-errc:
			assert.True(t, errors.Is(err, net.ErrClosed), "a read waiting when the connection closes ends with net.ErrClosed: %v", err)
		case <-time.After(5 * time.Second):
			t.Fatal("a read waiting in the poller did not end when the connection closed")
		}
		_, err := c.Write([]byte("x"))
		assert.ErrorIs(t, err, net.ErrClosed)
	})
}

// countingConn counts SetDeadline calls.
type countingConn struct {
	net.Conn
	sets int
	at   time.Time
}

func (c *countingConn) SetDeadline(t time.Time) error { c.sets++; c.at = t; return nil }

// A connection keeps its deadline across requests while it falls no
// earlier than each request's and at most the slack after it.
func TestConn_SetDeadlineKeepsTheDeadlineInForce(t *testing.T) {
	nc := &countingConn{}
	cn := &conn{nc: nc}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	const timeout = 30 * time.Second
	for i := range 1000 { // a request every millisecond for a second
		at := now.Add(time.Duration(i) * time.Millisecond)
		d := at.Add(timeout)
		require.NoError(t, cn.setDeadline(at, d))
		require.False(t, nc.at.Before(d), "request %d: the deadline in force %v is earlier than asked %v", i, nc.at, d)
		require.LessOrEqual(t, nc.at.Sub(d), maxDeadlineSlack, "request %d: the deadline in force is too late", i)
	}
	assert.LessOrEqual(t, nc.sets, 21, "a deadline set every 50 ms, not at every request")
	assert.GreaterOrEqual(t, nc.sets, 19)

	// A request with a nearer deadline (its context's) moves it at once,
	// with a slack of a 64th of its time.
	at := now.Add(time.Second)
	d := at.Add(100 * time.Millisecond)
	sets := nc.sets
	require.NoError(t, cn.setDeadline(at, d))
	assert.Equal(t, sets+1, nc.sets)
	assert.False(t, nc.at.Before(d))
	assert.LessOrEqual(t, nc.at.Sub(d), 100*time.Millisecond/64)
}

// Buffers given back by a burst of connections are kept for the next burst
// (not dropped past 64 and allocated again), until the reaper finds them
// no longer needed.
func TestPool_BuffersKeptForBursts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	c, err := New(Options{MaxConnsPerHost: 200, IdleTimeout: time.Hour})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	req, err := c.Prepare("GET", "http://"+ln.Addr().String()+"/", nil, nil)
	require.NoError(t, err)
	p := req.host
	burst := func() map[*buffers]bool {
		var cns []*conn
		for range 200 {
			cn, _, err := p.acquire(context.Background(), time.Now().Add(5*time.Second))
			require.NoError(t, err)
			cns = append(cns, cn)
		}
		bufs := map[*buffers]bool{}
		for _, cn := range cns {
			bufs[cn.buffers] = true
			p.release(cn)
		}
		return bufs
	}
	first := burst()
	p.mu.Lock()
	assert.Len(t, p.free, 200, "the buffers of the whole burst are kept")
	p.mu.Unlock()
	second := burst()
	assert.Equal(t, first, second, "the next burst borrows the same buffers: nothing allocated")

	p.reap() // nothing has been idle for an hour: only the free buffers are trimmed
	p.mu.Lock()
	defer p.mu.Unlock()
	assert.Len(t, p.idle, 200)
	assert.Len(t, p.free, maxFreeBuffers, "with no connection in use, the reaper keeps the floor")
}
