package httpc

import (
	"bufio"
	"context"
	"net"
	"sync/atomic"
	"time"
)

// hostPool holds the keep-alive connections to one host. Two channels keep
// it bounded without locks or allocations: slots has one token per open
// connection (capacity MaxConnsPerHost), idle holds connections not in use.
// A request takes an idle connection if there is one, else a slot to dial a
// new one, else waits for either until its deadline.
type hostPool struct {
	c          *Client
	addr       string // host:port
	secure     bool
	serverName string

	idle  chan *conn
	slots chan struct{}

	dials  atomic.Int64
	closed atomic.Bool
}

// conn is one keep-alive connection of the lean engine.
type conn struct {
	nc     net.Conn
	br     *bufio.Reader
	wbuf   []byte
	reused bool
}

func newHostPool(c *Client, secure bool, addr, serverName string) *hostPool {
	return &hostPool{
		c:          c,
		addr:       addr,
		secure:     secure,
		serverName: serverName,
		idle:       make(chan *conn, c.opts.MaxConnsPerHost),
		slots:      make(chan struct{}, c.opts.MaxConnsPerHost),
	}
}

// acquire returns an idle connection or a newly dialled one, waiting for a
// free slot until deadline or ctx ends. waited is how long it waited for
// the pool (0 when a connection or a slot was free at once; a dial is not
// waiting).
func (p *hostPool) acquire(ctx context.Context, deadline time.Time) (cn *conn, waited time.Duration, err error) {
	select {
	case cn := <-p.idle:
		return cn, 0, nil
	default:
	}
	select {
	case cn := <-p.idle:
		return cn, 0, nil
	case p.slots <- struct{}{}:
		cn, err := p.dial(ctx, deadline)
		return cn, 0, err
	default:
	}
	start := time.Now()
	wait := deadline.Sub(start)
	if wait <= 0 {
		return nil, 0, errPoolTimeout
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case cn := <-p.idle:
		return cn, time.Since(start), nil
	case p.slots <- struct{}{}:
		waited = time.Since(start)
		cn, err := p.dial(ctx, deadline)
		return cn, waited, err
	case <-ctx.Done():
		return nil, time.Since(start), ctx.Err()
	case <-t.C:
		return nil, time.Since(start), errPoolTimeout
	}
}

func (p *hostPool) dial(ctx context.Context, deadline time.Time) (*conn, error) {
	if p.closed.Load() {
		<-p.slots
		return nil, net.ErrClosed
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	nc, err := p.c.dialer.Dial(dctx, p.addr, p.secure, p.serverName)
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.dials.Add(1)
	return &conn{
		nc:   nc,
		br:   bufio.NewReaderSize(nc, p.c.opts.ReadBufferSize),
		wbuf: make([]byte, 0, p.c.opts.WriteBufferSize),
	}, nil
}

// release returns a healthy connection for reuse.
func (p *hostPool) release(cn *conn) {
	cn.reused = true
	if p.closed.Load() {
		p.discard(cn)
		return
	}
	select {
	case p.idle <- cn:
	default: // cannot happen while slots bound the count; stay safe
		p.discard(cn)
	}
}

// discard closes a connection that cannot be reused and frees its slot.
func (p *hostPool) discard(cn *conn) {
	_ = cn.nc.Close()
	<-p.slots
}

// closeIdle closes every idle connection.
func (p *hostPool) closeIdle() {
	for {
		select {
		case cn := <-p.idle:
			p.discard(cn)
		default:
			return
		}
	}
}
