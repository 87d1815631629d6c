package httpc

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// hostPool holds the keep-alive connections to one host, at most
// MaxConnsPerHost open at once. A request takes the most recently released
// idle connection if there is one, else dials a new one while the bound
// allows and fewer than MaxDialing dials are in progress, else waits
// (first come, first served) until its deadline for a released connection
// or its turn to dial, whichever comes first.
//
// Idle connections are kept last in, first out, so that a pool grown by a
// burst serves the load that follows from as few connections as it needs,
// and those it does not need stay idle and are closed after IdleTimeout:
// the pool holds what the concurrency of the last IdleTimeout needed, not
// the highest it ever reached. An idle connection also gives back its read
// and write buffers, which the next request to take it borrows again.
type hostPool struct {
	c          *Client
	addr       string // host:port
	secure     bool
	serverName string

	mu      sync.Mutex
	idle    []*conn   // by release time, the most recent last
	open    int       // connections open or being dialled
	dialing int       // of them, being dialled
	waiting []*waiter // requests waiting for a connection, oldest first
	reaper  *time.Timer
	reaping bool       // reaper is armed for the oldest idle connection
	free    []*buffers // buffers given back by idle connections, oldest first (see keepFree)
	// busyPeak is the most connections in use at once since the reaper
	// last ran.
	busyPeak int
	closed   bool

	dials atomic.Int64
}

// conn is one keep-alive connection of the lean engine.
type conn struct {
	nc net.Conn
	// raw is nc when it is a raw connection (plain TCP on Linux), which
	// writes a request and waits for its answer in one step (send).
	raw *rawConn
	*buffers
	reused bool
	idleAt time.Time // when it was last released
	// deadline is the read and write deadline in force on nc.
	deadline time.Time
}

// maxDeadlineSlack bounds how much later than asked a request's deadline
// may fall (see setDeadline).
const maxDeadlineSlack = 50 * time.Millisecond

// setDeadline makes nc's deadline d, asked at now, or a little later:
// the deadline in force is kept while it falls no earlier than d and at
// most a 64th of the time left (and at most 50 ms) after it, else it is
// moved that much past d. Setting a connection's deadline updates the
// runtime's timers; kept, a connection serving many requests a second
// updates them a few times a second instead of at every request, and a
// request times out within 1.6% of its timeout.
func (cn *conn) setDeadline(now, d time.Time) error {
	slack := min(d.Sub(now)/64, maxDeadlineSlack)
	if !cn.deadline.Before(d) && cn.deadline.Sub(d) <= slack {
		return nil
	}
	cn.deadline = d.Add(slack)
	return cn.nc.SetDeadline(cn.deadline)
}

// buffers are a connection's read and write buffers, lent to it while it
// is in use.
type buffers struct {
	br   *bufio.Reader
	wbuf []byte
}

// maxFreeBuffers is how many given-back buffers a pool keeps for
// connections to come out of idleness at the least; it keeps as many as
// connections were in use at once since the reaper last ran (keepFree),
// so that a load swinging between a few connections in use and many does
// not drop buffers at each ebb only to allocate them again at each flow —
// 12 KiB a connection, and the collections that follow. The reaper brings
// the free buffers back to that bound, the oldest first. (Not a sync.Pool:
// under the race detector it drops items at random, and a send on a warm
// connection allocates nothing.)
const maxFreeBuffers = 64

// keepFree is how many given-back buffers the pool keeps.
func (p *hostPool) keepFree() int { return max(maxFreeBuffers, p.busyPeak) }

// noteBusyLocked records the connections in use now in busyPeak.
func (p *hostPool) noteBusyLocked() {
	p.busyPeak = max(p.busyPeak, p.open-len(p.idle))
}

// waiter is a request waiting for a connection: it receives one, or nil
// for its turn to dial, in a slot counted in open and dialing.
type waiter struct {
	ch   chan *conn // buffered: the grant never blocks
	done bool       // granted or gone; guarded by hostPool.mu
}

func newHostPool(c *Client, secure bool, addr, serverName string) *hostPool {
	return &hostPool{c: c, addr: addr, secure: secure, serverName: serverName}
}

// acquire returns an idle connection or a newly dialled one, waiting for a
// free slot until deadline or ctx ends. waited is how long it waited for
// the pool (0 when a connection or a slot was free at once; a dial is not
// waiting).
func (p *hostPool) acquire(ctx context.Context, deadline time.Time) (cn *conn, waited time.Duration, err error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		cn := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.lendLocked(cn)
		p.noteBusyLocked()
		p.mu.Unlock()
		return cn, 0, nil
	}
	if p.open < p.c.opts.MaxConnsPerHost && p.dialing < p.c.opts.MaxDialing {
		p.open++
		p.dialing++
		p.noteBusyLocked()
		p.mu.Unlock()
		cn, err := p.dial(ctx, deadline)
		return cn, 0, err
	}
	start := time.Now()
	wait := deadline.Sub(start)
	if wait <= 0 {
		p.mu.Unlock()
		return nil, 0, errPoolTimeout
	}
	w := &waiter{ch: make(chan *conn, 1)}
	p.waiting = append(p.waiting, w)
	p.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case cn := <-w.ch:
		return p.granted(ctx, deadline, cn, start)
	case <-ctx.Done():
		err = ctx.Err()
	case <-t.C:
		err = errPoolTimeout
	}
	p.mu.Lock()
	granted := w.done
	w.done = true // gone: nextWaiterLocked skips it
	p.mu.Unlock()
	if granted { // a connection or a turn came as the wait ended: pass it on
		if cn := <-w.ch; cn != nil {
			p.release(cn)
		} else {
			p.dialed()
			p.freeSlot()
		}
	}
	return nil, time.Since(start), err
}

// granted completes a wait that received cn, or a slot to dial in when cn
// is nil.
func (p *hostPool) granted(ctx context.Context, deadline time.Time, cn *conn, start time.Time) (*conn, time.Duration, error) {
	waited := time.Since(start)
	if cn != nil {
		return cn, waited, nil // released by a request: it has its buffers
	}
	cn, err := p.dial(ctx, deadline)
	return cn, waited, err
}

// nextWaiterLocked removes and returns the oldest waiting request, or nil.
func (p *hostPool) nextWaiterLocked() *waiter {
	for len(p.waiting) > 0 {
		w := p.waiting[0]
		p.waiting[0] = nil
		p.waiting = p.waiting[1:]
		if len(p.waiting) == 0 {
			p.waiting = p.waiting[:0:0] // let the drained queue's array go
		}
		if !w.done {
			w.done = true
			return w
		}
	}
	return nil
}

// dial opens a connection in a slot already counted in open and dialing.
func (p *hostPool) dial(ctx context.Context, deadline time.Time) (*conn, error) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		p.dialed()
		p.freeSlot()
		return nil, net.ErrClosed
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	nc, err := p.c.dialer.Dial(dctx, p.addr, p.secure, p.serverName)
	cancel()
	p.dialed()
	if err != nil {
		p.freeSlot()
		return nil, err
	}
	p.dials.Add(1)
	cn := &conn{nc: nc}
	cn.raw, _ = nc.(*rawConn)
	p.mu.Lock()
	p.lendLocked(cn)
	p.mu.Unlock()
	return cn, nil
}

// lendLocked gives cn read and write buffers if it gave its own back.
func (p *hostPool) lendLocked(cn *conn) {
	if cn.buffers != nil {
		return
	}
	if n := len(p.free); n > 0 {
		b := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		b.br.Reset(cn.nc)
		cn.buffers = b
		return
	}
	cn.buffers = &buffers{br: bufio.NewReaderSize(cn.nc, p.c.opts.ReadBufferSize), wbuf: make([]byte, 0, p.c.opts.WriteBufferSize)}
}

// release returns a healthy connection for reuse: to the oldest waiting
// request, or to the idle connections.
func (p *hostPool) release(cn *conn) {
	cn.reused = true
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.discard(cn)
		return
	}
	if w := p.nextWaiterLocked(); w != nil {
		w.ch <- cn
		p.mu.Unlock()
		return
	}
	// Idle, it keeps no buffers: nothing is left to read in them after a
	// whole answer (a connection with unread bytes keeps its reader).
	if b := cn.buffers; b != nil && b.br.Buffered() == 0 {
		cn.buffers = nil
		if len(p.free) < p.keepFree() {
			b.br.Reset(nil)
			p.free = append(p.free, b)
		}
	}
	cn.idleAt = time.Now()
	p.idle = append(p.idle, cn)
	if timeout := p.c.opts.IdleTimeout; timeout > 0 && !p.reaping {
		p.reaping = true
		if p.reaper == nil {
			p.reaper = time.AfterFunc(timeout, p.reap)
		} else {
			p.reaper.Reset(timeout)
		}
	}
	p.mu.Unlock()
}

// reap closes the connections idle for IdleTimeout or longer and arms
// itself for the next one to expire.
func (p *hostPool) reap() {
	timeout := p.c.opts.IdleTimeout
	now := time.Now()
	p.mu.Lock()
	n := 0
	for n < len(p.idle) && now.Sub(p.idle[n].idleAt) >= timeout {
		n++
	}
	expired := append([]*conn(nil), p.idle[:n]...)
	m := copy(p.idle, p.idle[n:])
	clear(p.idle[m:])
	p.idle = p.idle[:m]
	p.open -= n // no request waits while connections are idle
	p.busyPeak = p.open - len(p.idle)
	if extra := len(p.free) - p.keepFree(); extra > 0 {
		m := copy(p.free, p.free[extra:])
		clear(p.free[m:])
		p.free = p.free[:m]
	}
	if len(p.idle) > 0 {
		p.reaper.Reset(timeout - now.Sub(p.idle[0].idleAt))
	} else {
		p.reaping = false
	}
	p.mu.Unlock()
	for _, cn := range expired {
		_ = cn.nc.Close()
	}
}

// discard closes a connection that cannot be reused and frees its slot.
func (p *hostPool) discard(cn *conn) {
	_ = cn.nc.Close()
	p.freeSlot()
}

// dialed ends a dial (done or given up): the turn goes to the oldest
// waiting request while the pool has room.
func (p *hostPool) dialed() {
	p.mu.Lock()
	p.dialing--
	p.grantTurnsLocked()
	p.mu.Unlock()
}

// grantTurnsLocked gives the oldest waiting requests their turns to dial,
// while the pool has room for them and fewer than MaxDialing dial.
func (p *hostPool) grantTurnsLocked() {
	for p.open < p.c.opts.MaxConnsPerHost && p.dialing < p.c.opts.MaxDialing {
		w := p.nextWaiterLocked()
		if w == nil {
			return
		}
		p.open++
		p.dialing++
		w.ch <- nil
	}
}

// freeSlot gives a slot whose connection closed (or never opened) to the
// oldest waiting request, which dials in it when fewer than MaxDialing
// dial, or frees it.
func (p *hostPool) freeSlot() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dialing < p.c.opts.MaxDialing {
		if w := p.nextWaiterLocked(); w != nil {
			p.dialing++
			w.ch <- nil
			return
		}
	}
	p.open--
}

// closeIdle closes every idle connection.
func (p *hostPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, cn := range idle {
		p.discard(cn)
	}
}

// close makes the pool refuse new connections and close those released.
func (p *hostPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
}

// stats returns the open and idle connections.
func (p *hostPool) stats() (open, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.open, len(p.idle)
}
