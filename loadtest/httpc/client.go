package httpc

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// Client sends prepared requests and classifies their answers. It is safe
// for concurrent use; create one per target and share it between users.
type Client struct {
	opts   Options
	dialer *Dialer
	std    *http.Client // net/http engine when HTTP2 or NetHTTP is set

	mu    sync.Mutex
	pools map[poolKey]*hostPool
	loops []*Loop
}

type poolKey struct {
	secure bool
	addr   string
}

// New returns a Client for opts. It fails when an option is invalid or
// RootCAPEM holds no certificate; the error names the field.
func New(opts Options) (*Client, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d, err := NewDialer(o)
	if err != nil {
		return nil, err
	}
	c := &Client{opts: o, dialer: d, pools: map[poolKey]*hostPool{}}
	if o.HTTP2 || o.NetHTTP {
		c.std = newStdClient(o, d)
	}
	return c, nil
}

// Options returns the client's options with defaults filled in.
func (c *Client) Options() Options { return c.opts }

// Dialer returns the dialer the client connects with (TLS roots, source
// addresses), for protocols that open their own connections such as SSE.
func (c *Client) Dialer() *Dialer { return c.dialer }

func (c *Client) pool(secure bool, addr, serverName string) *hostPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := poolKey{secure, addr}
	p := c.pools[k]
	if p == nil {
		p = newHostPool(c, secure, addr, serverName)
		c.pools[k] = p
	}
	return p
}

// Do sends r and discards the body, returning its outcome and the number of
// body bytes received. It is Exchange without a Call.
func (c *Client) Do(ctx context.Context, r *Request) loadtest.Response {
	return c.Exchange(ctx, r, nil)
}

// Func returns r as a request function for the open model:
// func(ctx) loadtest.Response sending r with Do.
func (c *Client) Func(r *Request) func(context.Context) loadtest.Response {
	return func(ctx context.Context) loadtest.Response { return c.Exchange(ctx, r, nil) }
}

// Exchange sends r with the per-call parts of call (nil for none) and
// classifies the answer. The deadline is the earlier of ctx's deadline and
// the per-request timeout; hitting it gives Timeout. A cancelled ctx is
// noticed before sending and while waiting for a connection; a request
// already on the wire runs until its deadline. Bytes counts the response
// body in bytes (after chunked decoding); Queued is how long the request
// waited for a connection of the pool (lean engine only), which the run's
// self-check holds against the generator, not the target.
func (c *Client) Exchange(ctx context.Context, r *Request, call *Call) loadtest.Response {
	if call != nil {
		call.reset()
	}
	if r.std != nil {
		return c.exchangeStd(ctx, r, call)
	}
	timeout := c.opts.Timeout
	if call != nil && call.Timeout > 0 {
		timeout = call.Timeout
	}
	now := time.Now()
	deadline := now.Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := ctx.Err(); err != nil {
		return ErrorResponse(err)
	}
	if call != nil {
		if err := checkPath(call.Path); err != nil {
			return ErrorResponse(err)
		}
	}
	p := r.host
	var queued time.Duration
	for attempt := 0; ; attempt++ {
		cn, waited, err := p.acquire(ctx, deadline)
		queued += waited
		if err != nil {
			resp := ErrorResponse(err)
			resp.Queued = queued
			return resp
		}
		if err := cn.setDeadline(now, deadline); err != nil {
			p.discard(cn)
			return ErrorResponse(err)
		}
		resp, keep, stale := cn.roundTrip(r, call, c.opts.MaxBodySize)
		if keep {
			p.release(cn)
		} else {
			p.discard(cn)
		}
		if stale && attempt == 0 && r.replay {
			continue
		}
		resp.Queued = queued
		return resp
	}
}

// Limit implements loadtest.Limiter: a workload's requests through the
// client wait once MaxConnsPerHost are in flight to one host.
func (c *Client) Limit() (int, string) {
	return c.opts.MaxConnsPerHost, "the HTTP client (httpc.Options.MaxConnsPerHost)"
}

// Stats are counters of a client's lean-engine connections.
type Stats struct {
	// Dials is the number of connections opened so far.
	Dials int64
	// Open is the number of connections open now.
	Open int
	// Idle is the number of open connections not in use now.
	Idle int
}

// Stats returns the client's connection counters summed over hosts. The
// net/http engine reports zeros.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s Stats
	for _, p := range c.pools {
		s.Dials += p.dials.Load()
		open, idle := p.stats()
		s.Open += open
		s.Idle += idle
	}
	return s
}

// CloseIdleConnections closes the connections not in use now.
func (c *Client) CloseIdleConnections() {
	if c.std != nil {
		c.std.CloseIdleConnections()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.pools {
		p.closeIdle()
	}
}

// Close closes idle connections and makes connections in use close when
// their request ends. Sends after Close fail with a TransportError.
func (c *Client) Close() {
	c.mu.Lock()
	for _, p := range c.pools {
		p.close()
	}
	loops := c.loops
	c.loops = nil
	c.mu.Unlock()
	c.CloseIdleConnections()
	for _, l := range loops {
		l.free()
	}
}
