package server

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// errPeerGone reports a stream whose client closed its end.
var errPeerGone = errors.New("the client closed the stream")

// stream is one held event stream.
//
// Writes happen under mu: from the hub's shard goroutine, and from the
// stream's handler while it replays missed events. While replaying, the
// shard queues live events in pending instead of writing them, so that
// events reach the client in order and once.
type stream struct {
	kind streamKind
	// replaying and closed are guarded by mu; they sit beside kind so that
	// the struct stays in the 112-byte size class.
	replaying, closed bool
	key               int64 // user id or workspace id
	shard             *shard
	w                 streamWriter
	// listenID is the JSON-RPC id of the subscriptions/listen request the
	// stream answers, "" for a GET stream.
	listenID string

	mu      sync.Mutex
	pending []*frame
	ballast []byte // the stream-memory fault's extra bytes
}

// streamWriter is where a stream's bytes go.
type streamWriter interface {
	// write writes one frame, giving up at deadline.
	write(f *frame, deadline time.Time) error
	// peerGone reports whether the client has closed its end.
	peerGone() bool
	// close writes final (when not nil) and ends the stream.
	close(final *frame, deadline time.Time)
}

// send writes f unless the stream is replaying (then it is queued) or
// closed. With checkPeer it first fails if the client has gone.
func (s *stream) send(f *frame, timeout time.Duration, checkPeer bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil
	case s.replaying:
		if f != keepaliveFrame {
			s.pending = append(s.pending, f)
		}
		return nil
	case checkPeer && s.w.peerGone():
		return errPeerGone
	}
	return s.w.write(f, time.Now().Add(timeout))
}

// sendReplayed writes a replayed frame, which the hub does not see.
func (s *stream) sendReplayed(f *frame, timeout time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return net.ErrClosed
	}
	return s.w.write(f, time.Now().Add(timeout))
}

// finishReplay writes the live events queued during the replay that it did
// not already send, and hands the stream to the hub.
func (s *stream) finishReplay(sent map[int64]bool, timeout time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replaying = false
	pending := s.pending
	s.pending = nil
	if s.closed {
		return net.ErrClosed
	}
	for _, f := range pending {
		if sent[f.id] {
			continue
		}
		if err := s.w.write(f, time.Now().Add(timeout)); err != nil {
			return err
		}
	}
	return nil
}

// close ends the stream once, writing final first when not nil; a
// subscriptions/listen stream is sent its request's result before final.
func (s *stream) close(final *frame, timeout time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.pending = nil
	s.ballast = nil
	if final != nil && s.listenID != "" {
		final = listenFinalFrame(s.listenID, final)
	}
	s.w.close(final, time.Now().Add(timeout))
}

// hijackedWriter writes to a connection taken over from net/http: no
// goroutine and no buffer is held while the stream is idle.
type hijackedWriter struct {
	conn    net.Conn
	chunked bool         // HTTP/1.1: the body is chunk-framed
	watcher *peerWatcher // watching conn for the client leaving, when not nil
	tok     uint64
}

func (w *hijackedWriter) bytes(f *frame) []byte {
	if w.chunked {
		return f.chunk
	}
	return f.raw
}

func (w *hijackedWriter) write(f *frame, deadline time.Time) error {
	if err := w.conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := w.conn.Write(w.bytes(f))
	return err
}

func (w *hijackedWriter) peerGone() bool { return peerClosed(w.conn) }

func (w *hijackedWriter) close(final *frame, deadline time.Time) {
	if final != nil {
		w.conn.SetWriteDeadline(deadline)
		bufs := net.Buffers{w.bytes(final)}
		if w.chunked {
			bufs = append(bufs, lastChunk)
		}
		bufs.WriteTo(w.conn)
	}
	if w.watcher != nil {
		w.watcher.unwatch(w.tok, w.conn)
	}
	w.conn.Close()
}

// heldWriter writes through net/http's ResponseWriter while the handler
// waits: a goroutine and net/http's buffers per stream. Used where the
// connection cannot be hijacked (HTTP/2) and by the stream-goroutine fault.
type heldWriter struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	gone <-chan struct{} // the request's context
	done chan struct{}   // closed by close: the handler returns
}

func (w *heldWriter) write(f *frame, deadline time.Time) error {
	_ = w.rc.SetWriteDeadline(deadline)
	if _, err := w.w.Write(f.raw); err != nil {
		return err
	}
	return w.rc.Flush()
}

func (w *heldWriter) peerGone() bool {
	select {
	case <-w.gone:
		return true
	default:
		return false
	}
}

func (w *heldWriter) close(final *frame, deadline time.Time) {
	if final != nil && !w.peerGone() {
		w.write(final, deadline)
	}
	close(w.done)
}
