package wsc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/internal/delivery"
)

// Read buffers: each connection reads messages into one buffer of its
// own, grown to the largest message it received, and given up after a
// message larger than maxKeptBuffer so that a held connection that once
// received a large message does not keep its size.
const (
	firstBuffer   = 512
	maxKeptBuffer = 16 << 10
)

// errClosed is why a connection whose user left is down.
var errClosed = errors.New("wsc: the connection is closed (its user left or Close was called)")

// Conn is one held WebSocket connection: a goroutine that connects, reads
// every message and, with Config.Reconnect, connects again after a drop,
// until its context ends or Close is called. Its methods are safe for
// concurrent use.
type Conn struct {
	g         *Group
	sink      loadtest.Sink // the connection's samples; nil records none
	header    http.Header
	ctx       context.Context // ends when the user leaves or Close is called
	cancel    context.CancelFunc
	stopAfter func() bool // unregisters the shutdown on the user's context
	stopOnce  sync.Once
	done      chan struct{}
	c         counters
	ids       atomic.Uint64 // NextID
	wturn     chan struct{} // holds a token while a message is written: one at a time (see write)

	// Owned by the connection's goroutine.
	buf      []byte // read buffer
	everConn bool   // a handshake completed before: the next is a reconnect

	mu sync.Mutex
	// ws is the connection while connected, else nil.
	ws *websocket.Conn
	// connecting is non-nil while an attempt is under way, and closed when
	// it ends; calls made meanwhile wait for it.
	connecting chan struct{}
	downErr    error            // why the connection is down
	closing    bool             // the user is closing the connection
	calls      map[string]*call // calls awaiting their reply, by id
	dl         delivery.Ledger  // expected messages (see delivery.go)
	finished   bool             // Close was called
}

func newConn(g *Group, sink loadtest.Sink) *Conn {
	c := &Conn{g: g, sink: sink, done: make(chan struct{}), wturn: make(chan struct{}, 1)}
	c.dl.Init(&g.rules, &c.mu, (*ledgerOwner)(c), &c.c.dl, sink)
	return c
}

// start runs the connection under ctx, with handshake headers h; herr
// says h is invalid, and the connection stays down.
func (c *Conn) start(ctx context.Context, h http.Header, herr error) {
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.header = h
	if herr != nil {
		c.downErr = herr
		c.stopAfter = func() bool { return true }
		c.c.connectErrors.Add(1)
		c.g.c.connectErrors.Add(1)
		c.record(KindConnect, 0, loadtest.Response{Outcome: loadtest.TransportError, Err: herr})
		close(c.done)
		return
	}
	c.connecting = make(chan struct{}) // calls made before the first dial wait for it
	c.stopAfter = context.AfterFunc(ctx, func() { c.stopOnce.Do(c.shutdown) })
	go c.run()
}

// Close closes the connection with a close handshake (code 1000), waits
// for its goroutine and returns its counters. Calls still waiting end with
// TransportError. Expected messages already overdue are judged (AppError
// delivery samples); those still within Config.DeliveryTimeout are not,
// since the user left before they were due (their pending observations
// are abandoned), but Stats.Missing counts them. With the deadline
// disabled (DeliveryTimeout < 0), Close judges every expected message
// still missing.
func (c *Conn) Close() Stats {
	c.stopOnce.Do(c.shutdown)
	c.stopAfter()
	<-c.done
	c.dl.Leave()
	c.mu.Lock()
	first := !c.finished
	c.finished = true
	var missed []delivery.Verdict
	if first && c.g.cfg.DeliveryTimeout < 0 {
		missed = c.dl.JudgeAllLocked()
	}
	c.mu.Unlock()
	if first {
		for _, v := range missed {
			c.dl.Settle(v)
		}
		c.g.mu.Lock()
		delete(c.g.conns, c)
		c.g.mu.Unlock()
	}
	return c.Stats()
}

// Done is closed when the connection's goroutine has ended: its user left,
// or, without Config.Reconnect, the connection ended.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Stats returns the connection's counters now.
func (c *Conn) Stats() Stats {
	st := c.c.snapshot()
	st.Clock = c.g.cfg.ClockName
	return st
}

// shutdown closes the connection for its user: a close handshake when
// connected (the reader sees its end), then the end of any dial or
// backoff. It runs once, from Close or when the user's context ends.
func (c *Conn) shutdown() {
	c.mu.Lock()
	c.closing = true
	ws := c.ws
	c.mu.Unlock()
	if ws != nil {
		_ = ws.Close(websocket.StatusNormalClosure, "")
	}
	c.cancel()
}

func (c *Conn) record(kind string, d time.Duration, r loadtest.Response) {
	if c.sink != nil {
		c.sink.Record(kind, d, r)
	}
}

// run holds the connection: a session per connection, with a backoff
// between them when Config.Reconnect asks for more.
func (c *Conn) run() {
	defer close(c.done)
	defer func() {
		c.setDown(nil)
		if c.ctx.Err() != nil {
			c.dl.Leave() // the user left: judge nothing that was not yet due
		}
	}()
	cfg := &c.g.cfg
	failures := 0
	for {
		connected, stop := c.session()
		if stop || c.ctx.Err() != nil || !cfg.Reconnect {
			return
		}
		if connected {
			failures = 0
		}
		failures++
		wait := cfg.MinBackoff
		for i := 1; i < failures && wait < cfg.MaxBackoff; i++ {
			wait *= 2
		}
		wait = min(wait, cfg.MaxBackoff)
		wait = wait/2 + rand.N(wait/2+1) // jitter: spread the reconnects of many users
		t := time.NewTimer(wait)
		select {
		case <-c.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// setDown marks the connection down for err (nil keeps the reason it has,
// or errClosed once the user left) and ends the attempt under way.
func (c *Conn) setDown(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.ctx.Err() != nil || c.closing:
		c.downErr = errClosed
	case err != nil:
		c.downErr = err
	}
	if c.connecting != nil {
		close(c.connecting)
		c.connecting = nil
	}
}

// session makes one connection and reads it until it ends. connected says
// the handshake completed; stop says the user left.
func (c *Conn) session() (connected, stop bool) {
	cfg := &c.g.cfg
	c.mu.Lock()
	if c.connecting == nil {
		c.connecting = make(chan struct{})
	}
	c.mu.Unlock()

	start := cfg.Now()
	dctx, cancel := context.WithTimeout(c.ctx, cfg.ConnectTimeout)
	ws, resp, err := websocket.Dial(dctx, cfg.URL, &websocket.DialOptions{
		HTTPClient:   cfg.HTTPClient,
		HTTPHeader:   c.header,
		Subprotocols: cfg.Subprotocols,
	})
	cancel()
	if err != nil {
		if c.ctx.Err() != nil {
			c.setDown(nil)
			return false, true
		}
		r := dialResponse(resp, err)
		c.c.connectErrors.Add(1)
		c.g.c.connectErrors.Add(1)
		c.record(KindConnect, cfg.Now().Sub(start), r)
		c.setDown(r.Err)
		return false, false
	}
	ws.SetReadLimit(cfg.MaxMessageSize)
	c.mu.Lock()
	if c.closing || c.ctx.Err() != nil {
		c.mu.Unlock()
		_ = ws.Close(websocket.StatusNormalClosure, "") // the user left during the handshake
		c.setDown(nil)
		return false, true
	}
	c.ws = ws
	c.downErr = nil
	close(c.connecting)
	c.connecting = nil
	c.mu.Unlock()

	connectedAt := cfg.Now()
	c.record(KindConnect, connectedAt.Sub(start), loadtest.Response{Outcome: loadtest.OK})
	c.c.connects.Add(1)
	c.g.c.connects.Add(1)
	if c.everConn {
		c.c.reconnects.Add(1)
		c.g.c.reconnects.Add(1)
	}
	c.everConn = true
	c.c.connected.Add(1)
	c.g.c.connected.Add(1)

	err = c.read(ws)

	c.mu.Lock()
	own := c.closing || c.ctx.Err() != nil
	r := endResponse(err, own, cfg.MaxMessageSize)
	c.ws = nil
	lost := errClosed
	if !own {
		lost = r.Err
		if lost == nil {
			lost = errors.New("wsc: the target closed the connection")
		}
	}
	c.downErr = lost
	waiting := make([]*call, 0, len(c.calls))
	for id, cl := range c.calls {
		waiting = append(waiting, cl)
		delete(c.calls, id)
	}
	c.mu.Unlock()
	for _, cl := range waiting {
		cl.ch <- loadtest.Response{Outcome: loadtest.TransportError, Err: fmt.Errorf("wsc: the connection ended before the reply: %w", lost)}
	}
	_ = ws.CloseNow() // after the target's close or a loss; after our own, waits for its handshake

	c.c.connected.Add(-1)
	c.g.c.connected.Add(-1)
	if !own {
		c.c.dropped.Add(1)
		c.g.c.dropped.Add(1)
	}
	c.record(KindConn, cfg.Now().Sub(connectedAt), r)
	return true, own
}

// dialResponse returns the KindConnect sample of a failed dial.
func dialResponse(resp *http.Response, err error) loadtest.Response {
	switch {
	case resp == nil:
		return httpc.ErrorResponse(fmt.Errorf("wsc: dial: %w", err))
	case resp.StatusCode == http.StatusSwitchingProtocols:
		return loadtest.Response{Outcome: loadtest.ProtocolError, Err: fmt.Errorf("wsc: the handshake answer is not a valid upgrade: %w", err)}
	case resp.StatusCode < 300:
		return loadtest.Response{Outcome: loadtest.ProtocolError, Err: fmt.Errorf("wsc: the handshake was answered HTTP %d, not 101 Switching Protocols: is the URL a WebSocket endpoint? (%w)", resp.StatusCode, err)}
	default:
		r := httpc.StatusResponse(resp.StatusCode, 0)
		r.Err = fmt.Errorf("wsc: the target refused the upgrade with HTTP %d: %w", resp.StatusCode, err)
		return r
	}
}

// read reads messages until the connection ends and returns why.
func (c *Conn) read(ws *websocket.Conn) error {
	now := c.g.cfg.Now
	for {
		// No deadline: an idle held connection is normal, and a context
		// with one would cost an allocation per frame. Close ends the read.
		_, r, err := ws.Reader(context.Background())
		if err != nil {
			return err
		}
		if c.buf == nil {
			c.buf = make([]byte, 0, firstBuffer)
		}
		c.buf, err = readAll(r, c.buf[:0])
		if err != nil {
			return err
		}
		if c.g.cfg.Lines {
			at := now()
			for rest := c.buf; len(rest) > 0; {
				line := rest
				if i := bytes.IndexByte(rest, '\n'); i >= 0 {
					line, rest = rest[:i], rest[i+1:]
				} else {
					rest = nil
				}
				if len(bytes.TrimSpace(line)) > 0 {
					c.handle(line, at)
				}
			}
		} else {
			c.handle(c.buf, now())
		}
		if cap(c.buf) > maxKeptBuffer {
			c.buf = nil
		}
	}
}

// readAll appends what r holds to b, growing it as needed.
func readAll(r io.Reader, b []byte) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// handle dispatches one received message: the reply of a pending call, or
// a pushed message.
func (c *Conn) handle(msg []byte, now time.Time) {
	cfg := &c.g.cfg
	c.c.messages.Add(1)
	c.g.c.messages.Add(1)
	id := cfg.ID(msg)
	if id != nil {
		c.mu.Lock()
		cl, ok := c.calls[string(id)]
		if ok {
			delete(c.calls, string(id))
		}
		c.mu.Unlock()
		if ok {
			c.c.replies.Add(1)
			c.g.c.replies.Add(1)
			cl.ch <- cfg.CheckReply(msg)
			return
		}
	}
	c.pushed(msg, id, now)
}

// pushed handles a message that answers no call: its fan-out delay, the
// expectations it meets, Config.OnMessage.
func (c *Conn) pushed(msg, id []byte, now time.Time) {
	cfg := &c.g.cfg
	if w, err := cfg.WrittenAt(msg); err != nil {
		if !errors.Is(err, ErrNoWrittenAt) {
			c.c.badWritten.Add(1)
			c.g.c.badWritten.Add(1)
			c.record(KindMalformed, 0, loadtest.Response{Outcome: loadtest.ProtocolError, Err: err})
		}
	} else {
		d := now.Sub(w)
		if d < 0 {
			c.c.skew.Add(1)
			c.g.c.skew.Add(1)
			d = 0
		}
		c.c.fanout.Add(1)
		c.g.c.fanout.Add(1)
		c.record(cfg.FanoutKind, d, loadtest.Response{Outcome: loadtest.OK, Bytes: int64(len(msg))})
	}
	if cfg.Match == nil || cfg.Match(msg) {
		c.mu.Lock()
		v := c.dl.ArrivedLocked(id, now)
		c.mu.Unlock()
		c.dl.Settle(v)
	}
	if cfg.OnMessage != nil {
		cfg.OnMessage(c, msg, now)
	}
}
