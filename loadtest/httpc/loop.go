package httpc

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// Loop sends prepared requests on an event loop of its own: the
// loadtest.EventLoop of an Arrivals workload (Arrivals.Loop). It sleeps once
// for all the arrivals due within Options.Quantum, writes them, and reads
// every answer that came meanwhile on its own non-blocking connections —
// one thread's sleep and wake-up for many requests, as wrk does, where the
// pooled engine (Client.Func) has a goroutine per request woken by the
// network poller and the schedule woken for every arrival. An answer's
// latency ends at the instant the kernel received its last bytes
// (SO_TIMESTAMPNS), not when the loop got round to reading it, so reading
// late costs no accuracy; sending late is charged to the arrival, from its
// intended time, and shows in the schedule-lag self-check.
//
// It sends the prepared requests as they are: plain http:// (https and
// the net/http engines go through Client.Func), with no Call. It follows
// the client's options for connections (MaxConnsPerHost, MaxDialing,
// DialTimeout, IdleTimeout, Routes, LocalAddrs), timeouts (Timeout) and
// resending on a stale connection, and classifies answers as Client.Do
// does, the requests' Expect included. It is Linux's: elsewhere
// Client.Loop fails and the workload keeps Do.
//
// While a wait is short (2 ms or less) the loop sleeps in a system call
// that keeps its goroutine's processor, to wake on time to within
// microseconds; it yields after every wake-up. With GOMAXPROCS=1 it does
// so only when Options.LoopAlone says the process serves nothing of its
// own; otherwise it sleeps in the runtime's poller, which wakes in whole
// milliseconds but serves a target or mock upstream in the same process
// meanwhile.
//
// One workload runs on a loop at a time, and the loop's connections close
// when it stops; Client.Close frees the loop itself, after the workload.
type Loop struct {
	c       *Client
	kinds   []loopKind
	quantum time.Duration
	timeout time.Duration
	hold    bool // its short sleeps may keep the processor (Options.LoopAlone)
	sys     loopSys
}

// loopKind is one kind's request as the loop writes it.
type loopKind struct {
	req  *Request
	wire []byte // head, blank line and body: the whole request
	host *loopHost
}

// loopHost is one host's connections and the requests waiting for one.
type loopHost struct {
	addrs      []*net.TCPAddr
	next       int
	max        int
	maxDialing int
	open       int // connections open or being opened
	dialing    []*loopConn
	idle       []*loopConn // by the time they went idle, the most recent last
	waiting    []loopRef   // requests waiting for a connection, oldest first, from head
	head       int
}

// Loop returns an event loop that sends reqs — kind i is reqs[i], as Mix[i]
// of the Arrivals workload it serves — on connections of its own, bounded
// as the client's pool is. It fails, saying why, for a request it cannot
// send (https, a client on net/http, another client's request) and on a
// system without it (it is Linux's): keep Kind.Do then.
func (c *Client) Loop(reqs ...*Request) (*Loop, error) {
	if len(reqs) == 0 {
		return nil, errors.New("httpc: Loop needs one request per kind of the mix; none given")
	}
	if c.std != nil {
		return nil, errors.New("httpc: the event loop sends HTTP/1.1 on its own connections; a client with Options.HTTP2 or NetHTTP sends through net/http: use Client.Func")
	}
	l := &Loop{c: c, quantum: c.opts.Quantum, timeout: c.opts.Timeout, hold: c.opts.LoopAlone || runtime.GOMAXPROCS(0) > 1}
	hosts := map[string]*loopHost{}
	for i, r := range reqs {
		if r == nil || r.host == nil || r.host.c != c {
			return nil, fmt.Errorf("httpc: Loop request %d was not prepared by this client; prepare it with the client that makes the loop", i)
		}
		if r.host.secure {
			return nil, fmt.Errorf("httpc: the event loop sends plain http:// requests; %s is https: send it with Client.Func (Kind.Do)", r.URL)
		}
		h := hosts[r.hostPort]
		if h == nil {
			var err error
			if h, err = c.loopHost(r.hostPort); err != nil {
				return nil, err
			}
			hosts[r.hostPort] = h
		}
		hasBody := r.body != nil || r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH"
		wire := appendTail(appendHead(nil, r, nil), nil, len(r.body), hasBody)
		l.kinds = append(l.kinds, loopKind{req: r, wire: append(wire, r.body...), host: h})
	}
	if err := l.open(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.loops = append(c.loops, l)
	c.mu.Unlock()
	return l, nil
}

// loopHost resolves the addresses a host's connections go to: its own, or
// its Routes in turn.
func (c *Client) loopHost(hostPort string) (*loopHost, error) {
	to := c.opts.Routes[hostPort]
	if len(to) == 0 {
		to = []string{hostPort}
	}
	h := &loopHost{max: c.opts.MaxConnsPerHost, maxDialing: c.opts.MaxDialing}
	for _, a := range to {
		ta, err := net.ResolveTCPAddr("tcp", a)
		if err != nil {
			return nil, fmt.Errorf("httpc: the event loop cannot resolve %s: %w", a, err)
		}
		h.addrs = append(h.addrs, ta)
	}
	return h, nil
}

// Kinds implements loadtest.EventLoop.
func (l *Loop) Kinds() int { return len(l.kinds) }

var _ loadtest.EventLoop = (*Loop)(nil)
