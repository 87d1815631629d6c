// Package grpcc is Headroom's gRPC engine: a pool of client connections
// that a workload's request kinds call through, with every call's end
// classified into a loadtest.Outcome.
//
// A kind is a function of a connection, so that the service's generated
// stubs do the calling:
//
//	gc, err := grpcc.New("127.0.0.1:50051", grpcc.Options{Conns: 2})
//	…
//	get := gc.Func(func(ctx context.Context, cc grpc.ClientConnInterface) error {
//		_, err := pb.NewRouteGuideClient(cc).GetFeature(ctx, &pb.Point{Latitude: 409146138, Longitude: -746188906})
//		return err
//	})
//	kinds := []loadtest.Kind{{Name: "GetFeature", Weight: 1, Do: get}}
//
// Outcomes (Classify): OK is OK; DeadlineExceeded, or the call's own
// deadline, is Timeout; Unavailable (no connection, a reset, a server
// going away) is TransportError; every other status — NotFound,
// ResourceExhausted, Internal, the service's own errors — is AppError.
//
// The pool's size is part of the plan. HTTP/2 multiplexes calls on a
// connection, and grpc-go queues a call out of sight once a connection
// carries as many streams as the server allows; here the pool admits at
// most Options.MaxInFlight calls at once and a call past that waits for a
// slot, its wait reported as Response.Queued, which the run's self-check
// holds against the generator (SelfCheck.MaxQueueWait), not the target,
// as it does for httpc's connection pool.
//
// A held server stream (a subscription, a feed) is measured as sse's and
// wsc's pushed messages are: Fanout.Receive records each message's fan-out
// delay, its receipt less the written time a field of it carries, and,
// given the stream's Delivery (Deliveries.For), meets the messages
// expected of it: one expected and never received is a missed message, a
// KindDelivery AppError sample, as sse's and wsc's.
package grpcc

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/headroom-dev/headroom/loadtest"
)

// Options configure a Client. The zero value is one plaintext (h2c)
// connection admitting 100 calls at once, each with a 10 s deadline.
type Options struct {
	// Conns is how many connections the pool holds; calls go round-robin
	// over them. Default 1.
	Conns int
	// MaxInFlight is how many calls the pool lets run at once; a call past
	// it waits for one to end (Response.Queued). Default 100 per
	// connection, the MAX_CONCURRENT_STREAMS most servers announce; a
	// negative value means no bound (a queue inside grpc-go is then not
	// seen).
	MaxInFlight int
	// Timeout is each call's deadline, unless ctx ends earlier. Default 10 s.
	Timeout time.Duration
	// TLS, when set, secures the connections (with the stack's CA in its
	// RootCAs); nil is plaintext HTTP/2 (h2c).
	TLS *tls.Config
	// DialOptions are added to the pool's own (credentials, and nothing
	// that waits: connections open on the first call).
	DialOptions []grpc.DialOption
}

// Client is a pool of connections to one target. It is safe for
// concurrent use.
type Client struct {
	target string
	opts   Options
	conns  []*grpc.ClientConn
	next   atomic.Uint64
	slots  chan struct{} // nil: no bound
}

// New returns a pool of connections to target (host:port, or any target
// grpc.NewClient takes). Nothing is dialled until the first call; a bad
// option or target is an error now.
func New(target string, o Options) (*Client, error) {
	if o.Conns < 0 {
		return nil, fmt.Errorf("grpcc: Conns %d: give a positive number of connections (0 for one)", o.Conns)
	}
	if o.Timeout < 0 {
		return nil, fmt.Errorf("grpcc: Timeout %v: give a positive deadline (0 for 10s)", o.Timeout)
	}
	if o.Conns == 0 {
		o.Conns = 1
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 100 * o.Conns
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	creds := insecure.NewCredentials()
	if o.TLS != nil {
		creds = credentials.NewTLS(o.TLS)
	}
	dopts := append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, o.DialOptions...)
	c := &Client{target: target, opts: o}
	if o.MaxInFlight > 0 {
		c.slots = make(chan struct{}, o.MaxInFlight)
	}
	for range o.Conns {
		cc, err := grpc.NewClient(target, dopts...)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("grpcc: target %q: %w", target, err)
		}
		c.conns = append(c.conns, cc)
	}
	return c, nil
}

// Close closes every connection of the pool.
func (c *Client) Close() error {
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// Conn returns the pool's next connection (round-robin), for set-up calls
// outside the load.
func (c *Client) Conn() *grpc.ClientConn {
	return c.conns[c.next.Add(1)%uint64(len(c.conns))]
}

// Call runs call on one of the pool's connections once a slot is free,
// with the call's deadline in ctx, and classifies the error it returns.
// Queued is how long it waited for the slot; a call that waited past its
// deadline is a Timeout that never reached the target.
func (c *Client) Call(ctx context.Context, call func(ctx context.Context, cc grpc.ClientConnInterface) error) loadtest.Response {
	if err := ctx.Err(); err != nil {
		return loadtest.Response{Outcome: Classify(err), Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	var queued time.Duration
	if c.slots != nil {
		select {
		case c.slots <- struct{}{}:
		default:
			start := time.Now()
			select {
			case c.slots <- struct{}{}:
				queued = time.Since(start)
			case <-ctx.Done():
				err := fmt.Errorf("grpcc: no free slot of %d before the deadline (pool saturated): %w", cap(c.slots), context.Cause(ctx))
				return loadtest.Response{Outcome: Classify(err), Err: err, Queued: time.Since(start)}
			}
		}
		defer func() { <-c.slots }()
	}
	err := call(ctx, c.Conn())
	return loadtest.Response{Outcome: Classify(err), Err: err, Queued: queued}
}

// Func returns call as a request function for a workload's kind.
func (c *Client) Func(call func(ctx context.Context, cc grpc.ClientConnInterface) error) func(context.Context) loadtest.Response {
	return func(ctx context.Context) loadtest.Response { return c.Call(ctx, call) }
}

// Limit implements loadtest.Limiter: calls through the pool wait once
// MaxInFlight are running.
func (c *Client) Limit() (int, string) {
	if c.slots == nil {
		return 0, ""
	}
	return cap(c.slots), "the gRPC pool (grpcc.Options.MaxInFlight)"
}

// Classify returns the outcome of a call that ended with err: OK for nil
// or codes.OK; Timeout for codes.DeadlineExceeded, context.DeadlineExceeded
// or os.ErrDeadlineExceeded; TransportError for codes.Unavailable and for
// a cancelled call (codes.Canceled, context.Canceled: the run ended under
// it); AppError for every other status code; and TransportError for an
// error that carries no status.
func Classify(err error) loadtest.Outcome {
	if err == nil {
		return loadtest.OK
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return loadtest.Timeout
	}
	st, ok := status.FromError(err)
	if !ok {
		return loadtest.TransportError
	}
	switch st.Code() {
	case codes.OK:
		return loadtest.OK
	case codes.DeadlineExceeded:
		return loadtest.Timeout
	case codes.Unavailable, codes.Canceled:
		return loadtest.TransportError
	default:
		return loadtest.AppError
	}
}
