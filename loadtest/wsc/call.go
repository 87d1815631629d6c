package wsc

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// call is a Call awaiting its reply: the reader, or the end of the
// connection, sends its Response once on ch, after taking it out of
// Conn.calls; calls are reused, since one is made per request.
type call struct {
	ch chan loadtest.Response
}

var callPool = sync.Pool{New: func() any { return &call{ch: make(chan loadtest.Response, 1)} }}

// Call sends msg as a text message and waits for its reply: the message
// whose id (Config.ID) is id. Its latency is the caller's to measure (a
// workload's core times the request function); the Response is its
// outcome: Config.CheckReply's verdict on the reply (by default OK, or
// AppError for a JSON-RPC error, ProtocolError for a reply that is not
// JSON); Timeout when ctx or Config.CallTimeout ends first, the reply
// still owed; TransportError when the connection is down (a call made
// while the connection is dialling waits for the handshake) or ends
// before the reply. Its Queued is how long its message waited for the
// connection's earlier messages to be written.
//
// id must be unique among the connection's pending calls (see NextID); a
// second call with a pending id is a ProtocolError, sent nothing. A reply
// that comes after its call ended is handled as a pushed message. A
// write cut short by the deadline closes the connection (a rule of the
// WebSocket library: a partial frame cannot be taken back).
func (c *Conn) Call(ctx context.Context, msg []byte, id string) loadtest.Response {
	ctx, cancel := context.WithTimeout(ctx, c.g.cfg.CallTimeout)
	defer cancel()
	ws, r, ok := c.await(ctx)
	if !ok {
		return r
	}
	cl := callPool.Get().(*call)
	c.mu.Lock()
	switch {
	case c.ws != ws:
		err := c.downErr
		c.mu.Unlock()
		callPool.Put(cl)
		return loadtest.Response{Outcome: loadtest.TransportError, Err: fmt.Errorf("wsc: not connected: %w", err)}
	case c.calls[id] != nil:
		c.mu.Unlock()
		callPool.Put(cl)
		return loadtest.Response{Outcome: loadtest.ProtocolError, Err: fmt.Errorf("wsc: a call with id %q is already awaiting its reply on this connection; give each call a unique id (Conn.NextID)", id)}
	}
	if c.calls == nil {
		c.calls = map[string]*call{}
	}
	c.calls[id] = cl
	c.mu.Unlock()
	c.c.calls.Add(1)
	c.g.c.calls.Add(1)

	queued, err := c.write(ctx, ws, msg)
	if err != nil {
		if c.forget(id, cl) {
			callPool.Put(cl)
			r = httpc.ErrorResponse(fmt.Errorf("wsc: send id %q: %w", id, err))
			r.Queued = queued
			return r
		}
		// The reply, or the connection's end, came first.
	} else {
		select {
		case r = <-cl.ch:
			callPool.Put(cl)
			r.Queued = queued
			return r
		case <-ctx.Done():
			if c.forget(id, cl) {
				callPool.Put(cl)
				r = httpc.ErrorResponse(fmt.Errorf("wsc: no reply to id %q: %w", id, context.Cause(ctx)))
				r.Queued = queued
				return r
			}
			// Taken by the reader as the deadline came: its verdict is
			// on its way.
		}
	}
	r = <-cl.ch
	callPool.Put(cl)
	r.Queued = queued
	return r
}

// write sends msg on ws as a text message, one message at a time on the
// connection, and returns how long it waited for the messages written
// before it: a queue inside the generator (Response.Queued), which a
// run's self-check holds against SelfCheck.MaxQueueWait. A target that
// reads slowly backs writes up into it; more connections, or fewer calls
// on each, drain it.
func (c *Conn) write(ctx context.Context, ws *websocket.Conn, msg []byte) (time.Duration, error) {
	var queued time.Duration
	select {
	case c.wturn <- struct{}{}:
	default:
		start := time.Now()
		select {
		case c.wturn <- struct{}{}:
			queued = time.Since(start)
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("waiting for the messages before it: %w", context.Cause(ctx))
		}
	}
	defer func() { <-c.wturn }()
	return queued, ws.Write(ctx, websocket.MessageText, msg)
}

// forget takes the call cl out of the pending calls, unless the reader or
// the connection's end took it first (its Response is then on the way).
func (c *Conn) forget(id string, cl *call) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls[id] != cl {
		return false
	}
	delete(c.calls, id)
	return true
}

// Send sends msg as a text message without waiting for anything, such as
// a subscription or a notification, within ctx and Config.CallTimeout. It
// fails when the connection is down (a send while dialling waits for the
// handshake) or the write fails.
func (c *Conn) Send(ctx context.Context, msg []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.g.cfg.CallTimeout)
	defer cancel()
	ws, r, ok := c.await(ctx)
	if !ok {
		return r.Err
	}
	if _, err := c.write(ctx, ws, msg); err != nil {
		return fmt.Errorf("wsc: send: %w", err)
	}
	return nil
}

// NextID returns a new call id, unique on this connection: "1", "2", …
func (c *Conn) NextID() string { return strconv.FormatUint(c.ids.Add(1), 10) }

// Func returns a request function for a workload's kind that calls over
// this connection: each call takes the next id (NextID) and sends the
// message build makes with it, such as
//
//	func(id string) []byte { return []byte(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`) }
func (c *Conn) Func(build func(id string) []byte) func(context.Context) loadtest.Response {
	return func(ctx context.Context) loadtest.Response {
		id := c.NextID()
		return c.Call(ctx, build(id), id)
	}
}

// await returns the connection to send on, waiting while a dial is under
// way; otherwise it returns the failed call's Response.
func (c *Conn) await(ctx context.Context) (*websocket.Conn, loadtest.Response, bool) {
	if err := ctx.Err(); err != nil {
		return nil, httpc.ErrorResponse(fmt.Errorf("wsc: %w", context.Cause(ctx))), false
	}
	for {
		c.mu.Lock()
		ws, wait, down := c.ws, c.connecting, c.downErr
		c.mu.Unlock()
		if ws != nil {
			return ws, loadtest.Response{}, true
		}
		if wait == nil {
			if down == nil {
				down = errClosed
			}
			return nil, loadtest.Response{Outcome: loadtest.TransportError, Err: fmt.Errorf("wsc: not connected: %w", down)}, false
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, httpc.ErrorResponse(fmt.Errorf("wsc: still connecting: %w", context.Cause(ctx))), false
		}
	}
}
