package sse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/internal/delivery"
	"github.com/headroom-dev/headroom/loadtest/offstack"
)

// Stream is one held event stream: a goroutine that connects, reads and
// reconnects with Last-Event-ID until its context ends or Close is called.
type Stream struct {
	g      *Group
	sink   loadtest.Sink // the stream's samples; nil records none
	req    []byte        // request head up to the Last-Event-ID, without the final CRLF
	cancel context.CancelFunc
	stop   func() bool
	done   chan struct{}
	c      counters

	connMu sync.Mutex
	conn   net.Conn

	// The stream's goroutine runs its deep steps on s.off (see session);
	// their inputs and results are these fields, owned by whichever of
	// the two runs.
	ctx        context.Context
	off        offstack.Runner
	stepFn     func()
	op         int
	l          live
	w          *waiter
	ps         pumpState
	end, ok    bool
	progressed bool
	wait       bool
	err        error

	parser    Parser
	buf       []byte  // read buffer, borrowed from readBufs while in use
	bufp      *[]byte // what buf was borrowed as
	dc        dechunker
	connStart time.Time
	readAt    time.Time
	gotFirst  bool
	unhealthy bool
	gotData   bool
	retry     time.Duration
	everConn  bool

	mu       sync.Mutex
	lastID   []byte          // copy of the parser's last event ID for other goroutines
	dl       delivery.Ledger // expected events (see delivery.go), guarded by mu
	finished bool            // Close was called
}

func newStream(g *Group, sink loadtest.Sink, header []httpc.Header) *Stream {
	t := &g.tgt
	cfg := &g.cfg
	b := make([]byte, 0, 96+len(cfg.Method)+len(cfg.Accept)+len(t.path)+len(t.host))
	b = append(b, cfg.Method...)
	b = append(b, ' ')
	b = append(b, t.path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, t.host...)
	b = append(b, "\r\nAccept: "...)
	b = append(b, cfg.Accept...)
	b = append(b, "\r\nCache-Control: no-cache\r\n"...)
	if cfg.Body != nil {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(cfg.Body)), 10)
		b = append(b, "\r\n"...)
	}
	for _, hs := range [][]httpc.Header{g.cfg.Header, header} {
		for _, h := range hs {
			if h.Name == "" || containsAny(h.Name, " :\r\n") || containsAny(h.Value, "\r\n") {
				continue // never break the framing; NewGroup validated the group's
			}
			b = append(b, h.Name...)
			b = append(b, ": "...)
			b = append(b, h.Value...)
			b = append(b, "\r\n"...)
		}
	}
	s := &Stream{g: g, sink: sink, req: b, done: make(chan struct{})}
	s.dl.Init(&g.rules, &s.mu, (*ledgerOwner)(s), &s.c.dl, sink)
	s.off.Unpooled = g.ownDial
	s.stepFn = s.step // made once: the stream's goroutine allocates nothing for its steps
	s.parser.Handler = (*handler)(s)
	s.parser.MaxEventSize = g.cfg.MaxEventSize
	return s
}

func (s *Stream) start(ctx context.Context) {
	ctx, s.cancel = context.WithCancel(ctx)
	s.ctx = ctx
	s.stop = context.AfterFunc(ctx, s.closeConn)
	go s.run(ctx)
}

// Close stops the stream, waits for its goroutine and returns its
// counters. Expected events already overdue are judged (AppError delivery
// samples); those still within Config.DeliveryTimeout are not, since the
// user left before they were due (their pending observations are
// abandoned), but Stats.Missing counts them. With the deadline disabled
// (DeliveryTimeout < 0), Close judges every expected event still missing.
func (s *Stream) Close() Stats {
	s.cancel()
	<-s.done
	s.dl.Leave()
	s.mu.Lock()
	first := !s.finished
	s.finished = true
	var missed []delivery.Verdict
	if first && s.g.cfg.DeliveryTimeout < 0 {
		missed = s.dl.JudgeAllLocked()
	}
	s.mu.Unlock()
	if first {
		s.stop()
		for _, v := range missed {
			s.dl.Settle(v)
		}
		s.g.mu.Lock()
		delete(s.g.streams, s)
		s.g.mu.Unlock()
	}
	return s.Stats()
}

// Done is closed when the stream's goroutine has ended.
func (s *Stream) Done() <-chan struct{} { return s.done }

// Stats returns the stream's counters now.
func (s *Stream) Stats() Stats {
	st := s.c.snapshot()
	st.Clock = s.g.cfg.ClockName
	return st
}

// LastEventID returns the last event ID received, which the stream sends as
// Last-Event-ID when it reconnects.
func (s *Stream) LastEventID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.lastID)
}

func (s *Stream) record(kind string, d time.Duration, r loadtest.Response) {
	if s.sink != nil {
		s.sink.Record(kind, d, r)
	}
}

func (s *Stream) closeConn() {
	s.connMu.Lock()
	if s.conn != nil {
		_ = s.conn.Close()
	}
	s.connMu.Unlock()
}

func (s *Stream) setConn(ctx context.Context, c net.Conn) bool {
	s.connMu.Lock()
	s.conn = c
	s.connMu.Unlock()
	if ctx.Err() != nil { // cancelled before the conn was visible to closeConn
		_ = c.Close()
		return false
	}
	return true
}

func (s *Stream) run(ctx context.Context) {
	defer close(s.done)
	defer func() {
		s.giveBackBuf()
		if ctx.Err() != nil {
			s.dl.Leave() // the user left: judge nothing that was not yet due
		}
	}()
	cfg := &s.g.cfg
	failures := 0
	for ctx.Err() == nil {
		end, progressed := s.session(ctx)
		if end || ctx.Err() != nil {
			return
		}
		if progressed {
			failures = 0
		}
		failures++
		wait := max(cfg.MinBackoff, s.retry)
		for i := 1; i < failures && wait < cfg.MaxBackoff; i++ {
			wait *= 2
		}
		wait = min(wait, cfg.MaxBackoff)
		wait = wait/2 + rand.N(wait/2+1) // jitter: spread reconnects of many streams
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// session runs one connection. end says the stream must not reconnect (the
// target answered 204); progressed says the connection delivered data.
//
// Where the stream can wait on its socket without reading (see
// newWaiter), everything but the waiting — the dial and handshake, each
// read and what it delivers, the end — runs off the stream's goroutine
// (s.off), so that the goroutine a held stream parks keeps its starting
// stack: most of what an idle stream costs. The goroutine itself
// allocates nothing while it holds the connection (see offstack).
func (s *Stream) session(ctx context.Context) (end, progressed bool) {
	s.runStep(stepConnect)
	if !s.ok {
		s.giveBackBuf() // not held through the backoff
		return s.end, false
	}
	if s.w != nil {
		s.err = s.hold(ctx)
	} else {
		s.err = s.readBody(ctx, s.l.conn, s.l.pending, s.l.chunked)
	}
	s.runStep(stepFinish)
	return s.end, s.progressed
}

// The steps a stream runs off its goroutine (Stream.step).
const (
	stepConnect   = iota // s.l, s.end, s.ok = s.connect; s.w its waiter
	stepPump             // s.wait, s.err = s.pump
	stepUnhealthy        // the stream was silent for twice the keepalive interval
	stepFinish           // s.end, s.progressed = s.finish(s.err)
)

// runStep runs step op off the stream's goroutine.
func (s *Stream) runStep(op int) {
	s.op = op
	s.off.Run(s.stepFn)
}

// step runs the step s.op, its inputs and results in the stream's fields.
func (s *Stream) step() {
	ctx := s.ctx
	switch s.op {
	case stepConnect:
		s.l, s.end, s.ok = s.connect(ctx)
		s.w = nil
		if s.ok {
			s.w = newWaiter(s.l.conn)
			if s.w != nil {
				s.ps = pumpState{conn: s.l.conn, chunked: s.l.chunked, tls: s.w.tls, n: s.l.pending, buffered: s.w.tls}
			}
		}
	case stepPump:
		s.wait, s.err = s.pump(ctx, &s.ps, 2*s.g.cfg.KeepaliveInterval)
	case stepUnhealthy:
		s.setUnhealthy(2 * s.g.cfg.KeepaliveInterval)
	case stepFinish:
		s.end, s.progressed = s.finish(ctx, s.l, s.err)
		s.l, s.ps, s.w, s.err = live{}, pumpState{}, nil, nil
	}
}

// live is a connected stream, between connect and finish.
type live struct {
	conn        net.Conn
	pending     int  // body bytes read with the head, at the start of s.buf
	chunked     bool // the body is chunked
	connectedAt time.Time
}

// connect dials, sends the request and reads the response head. ok says
// the stream is connected (finish must follow); otherwise end says it must
// not reconnect.
func (s *Stream) connect(ctx context.Context) (l live, end, ok bool) {
	cfg := &s.g.cfg
	t := &s.g.tgt
	s.connStart = cfg.Now()
	realStart := time.Now()
	s.gotFirst, s.gotData = false, false
	s.parser.Reset()
	s.dc = dechunker{}
	s.borrowBuf()

	connectFail := func(r loadtest.Response) (live, bool, bool) {
		s.c.connectErrors.Add(1)
		s.g.c.connectErrors.Add(1)
		if ctx.Err() != nil {
			return live{}, true, false
		}
		s.record(KindConnect, cfg.Now().Sub(s.connStart), r)
		return live{}, false, false
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	conn, err := cfg.Dial(dctx, t.addr, t.secure, hostOnly(t.host))
	cancel()
	if err != nil {
		return connectFail(httpc.ErrorResponse(err))
	}
	if !s.setConn(ctx, conn) {
		_ = conn.Close()
		return live{}, true, false
	}
	connected := false
	defer func() {
		if !connected {
			s.setConn(context.Background(), nil)
			_ = conn.Close()
		}
	}()
	_ = conn.SetDeadline(realStart.Add(cfg.ConnectTimeout))

	// Request.
	lastID := s.parser.LastEventID()
	req := append(s.buf[:0], s.req...)
	if len(lastID) > 0 {
		req = append(req, "Last-Event-ID: "...)
		req = append(req, lastID...)
		req = append(req, "\r\n"...)
	}
	req = append(req, "\r\n"...)
	req = append(req, cfg.Body...)
	if _, err := conn.Write(req); err != nil {
		return connectFail(httpc.ErrorResponse(err))
	}

	// Response head.
	body, chunked, resp := s.readHead(conn)
	if resp.Outcome != loadtest.OK || resp.Err != nil {
		if se, ok := resp.Err.(*httpc.StatusError); ok && se.Code == 204 {
			s.record(KindConnect, cfg.Now().Sub(s.connStart), loadtest.Response{Outcome: loadtest.OK})
			return live{}, true, false // the target asks the client to stop
		}
		if resp.Outcome == loadtest.ProtocolError {
			s.c.protocolErrors.Add(1)
			s.g.c.protocolErrors.Add(1)
		}
		return connectFail(resp)
	}
	connectedAt := cfg.Now()
	s.record(KindConnect, connectedAt.Sub(s.connStart), resp)
	s.c.connects.Add(1)
	s.g.c.connects.Add(1)
	if s.everConn {
		s.c.reconnects.Add(1)
		s.g.c.reconnects.Add(1)
	}
	s.everConn = true
	s.c.connected.Add(1)
	s.g.c.connected.Add(1)
	_ = conn.SetWriteDeadline(time.Time{})
	connected = true
	return live{conn: conn, pending: body, chunked: chunked, connectedAt: connectedAt}, false, true
}

// finish records how a connected stream ended (endErr, from readBody) and
// closes it.
func (s *Stream) finish(ctx context.Context, l live, endErr error) (end, progressed bool) {
	defer func() {
		s.c.connected.Add(-1)
		s.g.c.connected.Add(-1)
		s.setHealthy()
		s.setConn(context.Background(), nil)
		_ = l.conn.Close()
	}()
	cfg := &s.g.cfg
	held := cfg.Now().Sub(l.connectedAt)
	progressed = s.gotData
	if ctx.Err() != nil {
		s.record(KindStream, held, loadtest.Response{Outcome: loadtest.OK})
		return true, progressed
	}
	s.c.drops.Add(1)
	s.g.c.drops.Add(1)
	r := httpc.ErrorResponse(endErr)
	if errors.Is(endErr, io.EOF) {
		r.Outcome = loadtest.TransportError // the target ended the stream
	}
	if r.Outcome == loadtest.ProtocolError {
		s.c.protocolErrors.Add(1)
		s.g.c.protocolErrors.Add(1)
	}
	s.record(KindStream, held, r)
	return false, progressed
}

var errStreamEnded = errors.New("sse: the target ended the stream")

// aLongTimeAgo is a read deadline that has passed: a read returns what a
// TLS connection holds decrypted or received, without waiting.
var aLongTimeAgo = time.Unix(1, 0)

// readBody reads the stream until it ends, blocking in Read, and returns
// why; pending body bytes are at the start of s.buf. It serves connections
// the stream cannot wait on (see hold).
func (s *Stream) readBody(ctx context.Context, conn net.Conn, pending int, chunked bool) error {
	ka := 2 * s.g.cfg.KeepaliveInterval
	n := pending
	for {
		if n > 0 {
			if done, err := s.deliver(s.buf[:n], chunked); done || err != nil {
				return err
			}
		}
		s.setReadDeadline(conn, ka)
		var err error
		n, err = conn.Read(s.buf)
		if n > 0 {
			s.gotRead()
		}
		if err != nil {
			if n > 0 {
				continue // handle the data first; the error repeats
			}
			if ka > 0 && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
				s.setUnhealthy(ka)
				continue
			}
			if errors.Is(err, io.EOF) {
				return errStreamEnded
			}
			return err
		}
	}
}

// deliver feeds data read from the body to the parser, dechunked when the
// body is chunked; done says the body ended (err is then errStreamEnded).
func (s *Stream) deliver(data []byte, chunked bool) (done bool, err error) {
	if !chunked {
		s.feed(data)
		return false, nil
	}
	data, done, err = s.dc.decode(data)
	s.feed(data)
	if err != nil {
		return true, err
	}
	if done {
		return true, errStreamEnded
	}
	return false, nil
}

// gotRead notes that the connection delivered bytes: the stream is alive.
func (s *Stream) gotRead() {
	s.readAt = s.g.cfg.Now()
	s.gotData = true
	s.setHealthy()
}

// pumpState is a held connection between the waits of hold.
type pumpState struct {
	conn     net.Conn
	chunked  bool
	tls      bool
	n        int  // bytes read, not yet delivered, at the start of s.buf
	readable bool // the socket has something to read: the wait said so
	// buffered says a TLS connection may hold records it received but has
	// not returned, which the socket no longer shows.
	buffered bool
}

// hold reads the stream until it ends and returns why; s.ps holds the
// connection and the body bytes read with the head. The stream's
// goroutine only waits for the socket to be readable, its read buffer
// given back meanwhile; each pump — the reads of what arrived and its
// delivery — runs off its stack.
func (s *Stream) hold(ctx context.Context) error {
	ka := 2 * s.g.cfg.KeepaliveInterval
	for {
		s.runStep(stepPump)
		if !s.wait {
			return s.err
		}
		s.setReadDeadline(s.l.conn, ka)
		if err := s.w.wait(); err != nil {
			if ka > 0 && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil {
				s.runStep(stepUnhealthy)
				continue
			}
			return err
		}
		s.ps.readable = true
	}
}

// pump delivers what was read, then reads what the connection has without
// waiting for more: wait says the stream must wait for its socket, and
// otherwise err says why the stream ended. It borrows the read buffer and
// gives it back.
func (s *Stream) pump(ctx context.Context, p *pumpState, ka time.Duration) (wait bool, err error) {
	s.borrowBuf()
	defer s.giveBackBuf()
	for {
		if p.n > 0 {
			if done, err := s.deliver(s.buf[:p.n], p.chunked); done || err != nil {
				return false, err
			}
			p.n = 0
		}
		var n int
		switch {
		case p.readable: // within the health deadline the wait armed
			p.readable = false
			n, err = p.conn.Read(s.buf)
			p.buffered = p.tls
		case p.buffered:
			_ = p.conn.SetReadDeadline(aLongTimeAgo)
			n, err = p.conn.Read(s.buf)
			if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				p.buffered = false // nothing held: wait on the socket
				return true, nil
			}
		default:
			return true, nil
		}
		if n > 0 {
			s.gotRead()
			p.n = n
		}
		if err != nil {
			switch {
			case n > 0:
				// Handle the data first; the error repeats on the next
				// read, after a wait that returns at once.
			case ka > 0 && errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil:
				s.setUnhealthy(ka)
				return true, nil
			case errors.Is(err, io.EOF):
				return false, errStreamEnded
			default:
				return false, err
			}
		}
	}
}

// setReadDeadline arms the health deadline: a stream silent for ka is
// unhealthy; ka 0 means none.
func (s *Stream) setReadDeadline(conn net.Conn, ka time.Duration) {
	if ka > 0 {
		_ = conn.SetReadDeadline(time.Now().Add(ka))
	} else {
		_ = conn.SetReadDeadline(time.Time{})
	}
}

func (s *Stream) feed(b []byte) { s.parser.Feed(b) }

func (s *Stream) setUnhealthy(silent time.Duration) {
	if s.unhealthy {
		return
	}
	s.unhealthy = true
	s.c.unhealthy.Add(1)
	s.g.c.unhealthy.Add(1)
	s.c.unhealthyNow.Add(1)
	s.g.c.unhealthyNow.Add(1)
	s.record(KindHealth, silent, loadtest.Response{Outcome: loadtest.Timeout, Err: errSilent})
}

var errSilent = errors.New("sse: no keepalive within twice the expected interval")

func (s *Stream) setHealthy() {
	if !s.unhealthy {
		return
	}
	s.unhealthy = false
	s.c.unhealthyNow.Add(-1)
	s.g.c.unhealthyNow.Add(-1)
}

// readHead reads the response head into s.buf and checks it. It returns
// how many body bytes follow the head at the start of s.buf and whether
// the body is chunked.
func (s *Stream) readHead(conn net.Conn) (pending int, chunked bool, r loadtest.Response) {
	buf := s.buf
	n := 0
	end := -1
	for end < 0 {
		if n == len(buf) {
			return 0, false, httpc.ErrorResponse(httpc.NewProtocolError("sse: response head larger than BufferSize "+strconv.Itoa(len(buf))+"; raise Config.BufferSize", buf[:64]))
		}
		m, err := conn.Read(buf[n:])
		n += m
		if i := bytes.Index(buf[:n], []byte("\r\n\r\n")); i >= 0 {
			end = i + 4
			break
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, false, httpc.ErrorResponse(err)
		}
	}
	head := buf[:end]
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return 0, false, httpc.ErrorResponse(httpc.NewProtocolError("sse: malformed status line", line))
	}
	code, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, httpc.ErrorResponse(httpc.NewProtocolError("sse: malformed status line", line))
	}
	if code != 200 {
		if code >= 200 && code < 300 && code != 204 {
			return 0, false, httpc.ErrorResponse(httpc.NewProtocolError("sse: stream answered "+strconv.Itoa(code)+", want 200", line))
		}
		if code == 204 {
			return 0, false, loadtest.Response{Outcome: loadtest.OK, Err: &httpc.StatusError{Code: 204}}
		}
		return 0, false, httpc.StatusResponse(code, 0)
	}
	isStream := false
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Type")):
			isStream = bytes.HasPrefix(bytes.ToLower(value), []byte("text/event-stream"))
			if !isStream {
				return 0, false, httpc.ErrorResponse(httpc.NewProtocolError("sse: Content-Type is not text/event-stream", value))
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.Contains(bytes.ToLower(value), []byte("chunked"))
		}
	}
	if !isStream {
		return 0, false, httpc.ErrorResponse(httpc.NewProtocolError("sse: response has no Content-Type text/event-stream", nil))
	}
	s.readAt = s.g.cfg.Now()
	pending = copy(buf, buf[end:n])
	return pending, chunked, loadtest.Response{Outcome: loadtest.OK}
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// handler is the Parser's view of a Stream.
type handler Stream

func (h *handler) Event(ev Event) {
	s := (*Stream)(h)
	cfg := &s.g.cfg
	now := s.readAt
	s.g.c.events.Add(1)
	if !s.gotFirst {
		s.gotFirst = true
		s.record(KindFirstEvent, now.Sub(s.connStart), loadtest.Response{Outcome: loadtest.OK, Bytes: int64(len(ev.Data))})
	}
	if w, err := cfg.WrittenAt(ev); err != nil {
		if !errors.Is(err, ErrNoWrittenAt) {
			s.c.badWritten.Add(1)
			s.g.c.badWritten.Add(1)
			s.record(KindMalformed, 0, loadtest.Response{Outcome: loadtest.ProtocolError, Err: err})
		}
	} else {
		d := now.Sub(w)
		if d < 0 {
			s.c.skew.Add(1)
			s.g.c.skew.Add(1)
			d = 0
		}
		s.c.fanout.Add(1)
		s.g.c.fanout.Add(1)
		s.record(cfg.FanoutKind, d, loadtest.Response{Outcome: loadtest.OK, Bytes: int64(len(ev.Data))})
	}
	s.mu.Lock()
	s.c.events.Add(1)
	s.lastID = append(s.lastID[:0], ev.ID...)
	var v delivery.Verdict
	if cfg.Match == nil || cfg.Match(ev) {
		v = s.dl.ArrivedLocked(ev.ID, now)
	}
	s.mu.Unlock()
	s.dl.Settle(v)
	if cfg.OnEvent != nil {
		cfg.OnEvent(s, ev, now)
	}
}

func (h *handler) Comment([]byte) {
	s := (*Stream)(h)
	s.c.comments.Add(1)
	s.g.c.comments.Add(1)
}

func (h *handler) Retry(d time.Duration) { (*Stream)(h).retry = d }

func (h *handler) Malformed(err *httpc.ProtocolError) {
	s := (*Stream)(h)
	s.c.protocolErrors.Add(1)
	s.g.c.protocolErrors.Add(1)
	s.record(KindMalformed, 0, loadtest.Response{Outcome: loadtest.ProtocolError, Err: err})
}
