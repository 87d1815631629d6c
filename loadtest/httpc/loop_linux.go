//go:build linux && (amd64 || arm64)

package httpc

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/headroom-dev/headroom/loadtest"
)

// shortSleep is the longest wait the loop sleeps through in a system call
// that keeps its processor; a longer one parks the goroutine in the
// runtime's network poller, which sleeps in whole milliseconds.
const shortSleep = 2 * time.Millisecond

// sysEpollPwait2 is epoll_pwait2(2) (Linux 5.11): epoll_wait with a
// timeout in nanoseconds, where epoll_wait's is in milliseconds.
const sysEpollPwait2 = 441

// wakeSlot marks the eventfd that Wake writes in the loop's epoll set.
const wakeSlot = -1

// loopSys is the Linux part of a Loop: its epoll set, its connections, the
// requests in flight and those waiting for a connection.
type loopSys struct {
	ep     int      // the epoll set
	epFile *os.File // the same, for waits in the runtime's poller
	epRC   syscall.RawConn
	wakeFd int // an eventfd in the set: Wake writes it
	woken  atomic.Bool
	freeMu sync.Mutex
	freed  bool

	conns     []*loopConn  // by slot, the epoll data of each connection
	slots     []int32      // free slots
	reqs      []loopReq    // by the driver's id
	deadlines deadlineHeap // requests by their deadline, soonest first
	seq       uint64
	hosts     []*loopHost

	events   []syscall.EpollEvent
	rbuf     []byte
	oob      []byte
	iov      syscall.Iovec
	msg      syscall.Msghdr
	ts       syscall.Timespec
	lastWake time.Time
	stamps   bool // the kernel gives receive times
	noStamps bool // tests: ask for none, as a kernel that gives none
	done     func(id int, resp loadtest.Response, at time.Time)
	early    []loopEnd
	pollFn   func(fd uintptr) bool
	polled   int
	localN   int
}

// loopReq is a request of the loop's, by the driver's id.
type loopReq struct {
	kind    int
	seq     uint64    // 0 when the id is not in flight
	cn      *loopConn // the connection it is on; nil while it waits for one
	retried bool
	sent    time.Time     // when Send was called
	queued  time.Duration // from Send until a connection took it
}

// loopRef names a request in flight at one send: stale once its seq moved on.
type loopRef struct {
	id  int
	seq uint64
}

// loopConn is one connection of the loop's.
type loopConn struct {
	slot      int32
	fd        int
	host      *loopHost
	addr      *net.TCPAddr // where it goes, for errors
	dialing   bool
	dialUntil time.Time
	id        int // the request on it, or -1
	seq       uint64
	wrote     int // bytes of its request written
	sentAt    time.Time
	served    int // requests answered on it
	idleSince time.Time
	parse     answerParser
	at        time.Time // when the last bytes read so far arrived
	out       bool      // waiting for writability too
}

func (l *Loop) open() error {
	s := &l.sys
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return os.NewSyscallError("epoll_create1", err)
	}
	wfd, _, e := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	if e != 0 {
		syscall.Close(ep)
		return os.NewSyscallError("eventfd2", e)
	}
	s.ep, s.wakeFd = ep, int(wfd)
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: wakeSlot}
	if err := syscall.EpollCtl(ep, syscall.EPOLL_CTL_ADD, s.wakeFd, &ev); err != nil {
		l.free()
		return os.NewSyscallError("epoll_ctl", err)
	}
	// The epoll set is itself readable while it holds an event: the
	// runtime's poller can wait on it through an os.File.
	if err := syscall.SetNonblock(ep, true); err != nil {
		l.free()
		return os.NewSyscallError("fcntl", err)
	}
	s.epFile = os.NewFile(uintptr(ep), "httpc-loop-epoll")
	if s.epRC, err = s.epFile.SyscallConn(); err != nil {
		l.free()
		return err
	}
	s.pollFn = func(fd uintptr) bool {
		s.polled = s.poll(0)
		return s.polled != 0
	}
	s.events = make([]syscall.EpollEvent, 256)
	s.rbuf = make([]byte, 64<<10)
	s.oob = make([]byte, syscall.CmsgSpace(16))
	s.iov.Base = &s.rbuf[0]
	s.iov.SetLen(len(s.rbuf))
	s.msg.Iov = &s.iov
	s.msg.Iovlen = 1
	s.msg.Control = &s.oob[0]
	for _, k := range l.kinds {
		if !containsHost(s.hosts, k.host) {
			s.hosts = append(s.hosts, k.host)
		}
	}
	return nil
}

func containsHost(hs []*loopHost, h *loopHost) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

// free closes the loop's epoll set and wake-up descriptor: Client.Close's.
func (l *Loop) free() {
	s := &l.sys
	s.freeMu.Lock()
	defer s.freeMu.Unlock()
	if s.freed {
		return
	}
	s.freed = true
	l.Close()
	if s.epFile != nil {
		_ = s.epFile.Close()
	} else if s.ep > 0 {
		_ = syscall.Close(s.ep)
	}
	if s.wakeFd > 0 {
		_ = syscall.Close(s.wakeFd)
	}
}

// Wake implements loadtest.EventLoop.
func (l *Loop) Wake() {
	s := &l.sys
	if s.woken.CompareAndSwap(false, true) {
		one := uint64(1)
		_, _, _ = syscall.RawSyscall(syscall.SYS_WRITE, uintptr(s.wakeFd), uintptr(unsafe.Pointer(&one)), 8)
	}
}

// Send implements loadtest.EventLoop.
func (l *Loop) Send(kind, id int, timeout time.Duration) {
	s := &l.sys
	if timeout <= 0 || timeout > l.timeout {
		timeout = l.timeout
	}
	for id >= len(s.reqs) {
		s.reqs = append(s.reqs, loopReq{})
	}
	s.seq++
	now := time.Now()
	s.reqs[id] = loopReq{kind: kind, seq: s.seq, sent: now}
	s.deadlines.push(deadlineRef{loopRef{id, s.seq}, now.Add(timeout)})
	h := l.kinds[kind].host
	h.waiting = append(h.waiting, loopRef{id, s.seq})
	l.serve(h)
}

// serve gives a host's waiting requests its idle connections, most
// recently used first, and opens connections for the rest within the
// host's bounds.
func (l *Loop) serve(h *loopHost) {
	s := &l.sys
	for h.head < len(h.waiting) {
		ref := h.waiting[h.head]
		id := ref.id
		if s.reqs[id].seq != ref.seq { // ended while it waited
			h.pop()
			continue
		}
		if n := len(h.idle); n > 0 {
			cn := h.idle[n-1]
			h.idle[n-1] = nil
			h.idle = h.idle[:n-1]
			h.pop()
			l.start(cn, id)
			continue
		}
		if h.open >= h.max || len(h.dialing) >= h.maxDialing || len(h.dialing) >= len(h.waiting)-h.head {
			return
		}
		if err := l.dial(h); err != nil {
			h.pop()
			l.end(id, ErrorResponse(err), time.Now())
		}
	}
}

// pop takes the oldest waiting request off the queue.
func (h *loopHost) pop() {
	h.waiting[h.head] = loopRef{}
	h.head++
	if h.head == len(h.waiting) {
		h.waiting, h.head = h.waiting[:0], 0
	}
}

// dial starts opening a connection to the host's next address.
func (l *Loop) dial(h *loopHost) error {
	s := &l.sys
	a := h.addrs[h.next%len(h.addrs)]
	h.next++
	var sa syscall.Sockaddr
	family := syscall.AF_INET
	if ip4 := a.IP.To4(); ip4 != nil {
		v := &syscall.SockaddrInet4{Port: a.Port}
		copy(v.Addr[:], ip4)
		sa = v
	} else {
		family = syscall.AF_INET6
		v := &syscall.SockaddrInet6{Port: a.Port}
		copy(v.Addr[:], a.IP.To16())
		sa = v
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: a, Err: os.NewSyscallError("socket", err)}
	}
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	if !s.noStamps {
		_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	}
	if locals := l.c.opts.LocalAddrs; len(locals) > 0 && family == syscall.AF_INET {
		la := locals[s.localN%len(locals)]
		s.localN++
		if la.Is4() {
			if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: la.As4()}); err != nil {
				syscall.Close(fd)
				return &net.OpError{Op: "dial", Net: "tcp", Addr: a, Err: os.NewSyscallError("bind", err)}
			}
		}
	}
	if err := syscall.Connect(fd, sa); err != nil && err != syscall.EINPROGRESS {
		syscall.Close(fd)
		return &net.OpError{Op: "dial", Net: "tcp", Addr: a, Err: os.NewSyscallError("connect", err)}
	}
	cn := &loopConn{fd: fd, host: h, addr: a, dialing: true, dialUntil: time.Now().Add(l.c.opts.DialTimeout), id: -1}
	if k := len(s.slots); k > 0 {
		cn.slot = s.slots[k-1]
		s.slots = s.slots[:k-1]
		s.conns[cn.slot] = cn
	} else {
		cn.slot = int32(len(s.conns))
		s.conns = append(s.conns, cn)
	}
	h.open++
	h.dialing = append(h.dialing, cn)
	ev := syscall.EpollEvent{Events: syscall.EPOLLOUT, Fd: cn.slot}
	if err := syscall.EpollCtl(s.ep, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.closeConn(cn) // undoes the counts above
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// connected handles a dialling connection's writability: the dial ended.
func (l *Loop) connected(cn *loopConn) {
	s := &l.sys
	h := cn.host
	h.dropDialing(cn)
	errno, err := syscall.GetsockoptInt(cn.fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
	if err == nil && errno != 0 {
		err = syscall.Errno(errno)
	}
	if err == nil {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: cn.slot}
		err = syscall.EpollCtl(s.ep, syscall.EPOLL_CTL_MOD, cn.fd, &ev)
	}
	if err != nil {
		l.closeConn(cn)
		l.failDial(h, &net.OpError{Op: "dial", Net: "tcp", Addr: cn.addr, Err: os.NewSyscallError("connect", err)})
		return
	}
	cn.dialing = false
	l.idle(cn, time.Now())
}

// failDial fails the request waiting longest: a dial that fails fails one
// request, as the pool's does, and the next may dial again.
func (l *Loop) failDial(h *loopHost, err error) {
	s := &l.sys
	for h.head < len(h.waiting) {
		ref := h.waiting[h.head]
		h.pop()
		if s.reqs[ref.id].seq == ref.seq {
			l.end(ref.id, ErrorResponse(err), time.Now())
			break
		}
	}
	l.serve(h)
}

func (h *loopHost) dropDialing(cn *loopConn) {
	for i, d := range h.dialing {
		if d == cn {
			h.dialing = append(h.dialing[:i], h.dialing[i+1:]...)
			return
		}
	}
}

// idle makes cn ready for the next request: the host's waiting one, or the
// idle stack.
func (l *Loop) idle(cn *loopConn, now time.Time) {
	cn.id = -1
	h := cn.host
	h.idle = append(h.idle, cn)
	cn.idleSince = now
	l.serve(h)
}

// start writes request id on cn.
func (l *Loop) start(cn *loopConn, id int) {
	s := &l.sys
	r := &s.reqs[id]
	r.cn = cn
	cn.id, cn.seq, cn.wrote = id, r.seq, 0
	cn.parse.reset(l.kinds[r.kind].req.noBody)
	cn.sentAt = time.Now()
	r.queued = cn.sentAt.Sub(r.sent)
	l.write(cn)
}

// write writes what is left of cn's request; a full socket waits for
// writability.
func (l *Loop) write(cn *loopConn) {
	s := &l.sys
	wire := l.kinds[s.reqs[cn.id].kind].wire
	for cn.wrote < len(wire) {
		rest := wire[cn.wrote:]
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(cn.fd), uintptr(unsafe.Pointer(&rest[0])), uintptr(len(rest)))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			l.watchOut(cn, true)
			return
		case e != 0:
			l.broken(cn, os.NewSyscallError("write", e))
			return
		}
		cn.wrote += int(n)
	}
	l.watchOut(cn, false)
}

// watchOut adds or removes writability from what cn's epoll entry waits for.
func (l *Loop) watchOut(cn *loopConn, on bool) {
	if cn.out == on {
		return
	}
	cn.out = on
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: cn.slot}
	if on {
		ev.Events |= syscall.EPOLLOUT
	}
	_ = syscall.EpollCtl(l.sys.ep, syscall.EPOLL_CTL_MOD, cn.fd, &ev)
}

// readable reads what cn has: the answer to its request, or the end of an
// idle connection.
func (l *Loop) readable(cn *loopConn, now time.Time) {
	s := &l.sys
	for {
		s.iov.SetLen(len(s.rbuf))
		s.msg.SetControllen(len(s.oob))
		n, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, uintptr(cn.fd), uintptr(unsafe.Pointer(&s.msg)), 0)
		if e == syscall.EINTR {
			continue
		}
		if e == syscall.EAGAIN {
			return
		}
		if cn.id < 0 { // an idle connection: the server closed it, or spoke out of turn
			l.drop(cn)
			return
		}
		if e != 0 {
			l.broken(cn, os.NewSyscallError("read", e))
			return
		}
		cn.at = l.received(now, cn.sentAt)
		if n == 0 {
			if cn.parse.eof() {
				l.answered(cn, false)
			} else {
				l.broken(cn, errEOF(cn.parse.started()))
			}
			return
		}
		used, done, err := cn.parse.feed(s.rbuf[:n])
		if err != nil {
			l.fail(cn, ErrorResponse(err))
			return
		}
		if done {
			// Bytes past the answer were not asked for: the connection
			// is out of step, and closes.
			l.answered(cn, cn.parse.st.keepAlive && used == int(n))
			return
		}
	}
}

// received returns when the bytes just read arrived: the kernel's receive
// time of the last of them, on the monotonic clock, within [sent, now].
func (l *Loop) received(now, sent time.Time) time.Time {
	s := &l.sys
	if int(s.msg.Controllen) >= syscall.CmsgLen(16) {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&s.oob[0]))
		if h.Level == syscall.SOL_SOCKET && h.Type == syscall.SCM_TIMESTAMPNS {
			ts := (*syscall.Timespec)(unsafe.Pointer(&s.oob[syscall.CmsgLen(0)]))
			at := now.Add(time.Duration(ts.Nano() - now.UnixNano()))
			s.stamps = true
			if at.Before(sent) {
				return sent
			}
			if at.After(now) {
				return now
			}
			return at
		}
	}
	// None (yet: a kernel turns stamping on a moment after the first
	// socket asks): the read's time, and answers wake the loop (Wait).
	return now
}

// errEOF is the error of a connection that ended before the whole answer.
func errEOF(started bool) error {
	if started {
		return io.ErrUnexpectedEOF
	}
	return io.EOF
}

// answered ends cn's request with its answer; keep says cn serves on.
func (l *Loop) answered(cn *loopConn, keep bool) {
	s := &l.sys
	id := cn.id
	p := &cn.parse
	resp := l.kinds[s.reqs[id].kind].req.answer(p.code, p.n)
	cn.served++
	at := cn.at
	l.end(id, resp, at)
	if keep {
		l.idle(cn, at)
	} else {
		l.drop(cn)
	}
}

// broken handles a connection that failed under its request: a reused
// connection the server had closed before any byte of the answer is
// resent once on another, as the pool does; otherwise the request fails.
func (l *Loop) broken(cn *loopConn, err error) {
	s := &l.sys
	id := cn.id
	r := &s.reqs[id]
	k := l.kinds[r.kind]
	if cn.served > 0 && !cn.parse.started() && k.req.replay && !r.retried {
		r.retried, r.cn = true, nil
		h := cn.host
		l.drop(cn)
		// First in line: it has waited longest.
		h.waiting = append(h.waiting, loopRef{})
		copy(h.waiting[h.head+1:], h.waiting[h.head:])
		h.waiting[h.head] = loopRef{id, r.seq}
		l.serve(h)
		return
	}
	l.fail(cn, ErrorResponse(&net.OpError{Op: "read", Net: "tcp", Addr: cn.addr, Err: err}))
}

// fail ends cn's request with resp and closes cn.
func (l *Loop) fail(cn *loopConn, resp loadtest.Response) {
	id := cn.id
	l.drop(cn)
	l.end(id, resp, time.Now())
}

// end reports request id's end to the driver, with how long it waited for
// a connection.
func (l *Loop) end(id int, resp loadtest.Response, at time.Time) {
	s := &l.sys
	r := &s.reqs[id]
	if r.cn != nil {
		resp.Queued = r.queued
	} else {
		resp.Queued = max(at.Sub(r.sent), 0) // it never had one
	}
	s.reqs[id] = loopReq{}
	if s.done == nil { // a Send before the first Wait
		s.early = append(s.early, loopEnd{id, resp, at})
		return
	}
	s.done(id, resp, at)
}

// loopEnd is a request's end reported before the first Wait.
type loopEnd struct {
	id   int
	resp loadtest.Response
	at   time.Time
}

// drop closes cn and serves its host's waiting requests with the room made.
func (l *Loop) drop(cn *loopConn) {
	h := cn.host
	l.closeConn(cn)
	l.serve(h)
}

// closeConn closes cn and forgets it.
func (l *Loop) closeConn(cn *loopConn) {
	s := &l.sys
	if cn.fd < 0 {
		return
	}
	_ = syscall.Close(cn.fd) // leaves the epoll set with it
	cn.fd = -1
	s.conns[cn.slot] = nil
	s.slots = append(s.slots, cn.slot)
	h := cn.host
	if h.open > 0 {
		h.open--
	}
	if cn.dialing {
		h.dropDialing(cn)
	}
	for i, x := range h.idle {
		if x == cn {
			h.idle = append(h.idle[:i], h.idle[i+1:]...)
			break
		}
	}
}

// Wait implements loadtest.EventLoop.
func (l *Loop) Wait(until time.Time, done func(id int, resp loadtest.Response, at time.Time)) {
	s := &l.sys
	s.done = done
	for _, e := range s.early {
		done(e.id, e.resp, e.at)
	}
	s.early = nil
	defer runtime.Gosched() // a processor kept through short sleeps is handed round
	now := time.Now()
	if next := l.nextDeadline(); !next.IsZero() && next.Before(until) {
		until = next
	}
	// At most one wake-up a quantum: what falls due sooner waits for it.
	floor := s.lastWake.Add(l.quantum)
	if until.Before(floor) {
		until = floor
	}
	n := 0
	switch wait := until.Sub(now); {
	case wait <= 0:
		n = s.poll(0)
	case !l.hold:
		// One processor, shared with the process's own servers: sleep in
		// the runtime's poller, which serves them meanwhile.
		if s.stamps {
			time.Sleep(wait)
			n = s.poll(0)
			break
		}
		if now.Before(floor) {
			time.Sleep(floor.Sub(now))
		}
		n = s.park(until)
	case s.stamps && wait <= shortSleep:
		// Answers keep their time in the kernel's stamps: sleep through
		// them to the next arrival, and read them all then.
		s.sleep(wait)
		n = s.poll(0)
	default:
		// Long, or answers without stamps: the first answer ends the
		// wait, once the quantum since the last wake-up has passed.
		if now.Before(floor) {
			s.sleep(floor.Sub(now))
			wait = time.Until(until)
		}
		if wait <= shortSleep {
			n = s.poll(wait)
		} else {
			n = s.park(time.Now().Add(wait - time.Millisecond)) // the poller may wake a millisecond late
		}
	}
	now = time.Now()
	s.lastWake = now
	l.handle(s.events[:n], now)
	l.expire(now)
}

// sleep sleeps d in a system call that keeps the processor.
func (s *loopSys) sleep(d time.Duration) {
	s.ts = syscall.NsecToTimespec(int64(d))
	_, _, _ = syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&s.ts)), 0, 0)
}

// poll waits up to d for events of the set, in a system call that keeps
// the processor (0: only those ready now).
func (s *loopSys) poll(d time.Duration) int {
	s.ts = syscall.NsecToTimespec(int64(max(d, 0)))
	for {
		n, _, e := syscall.RawSyscall6(sysEpollPwait2, uintptr(s.ep), uintptr(unsafe.Pointer(&s.events[0])), uintptr(len(s.events)), uintptr(unsafe.Pointer(&s.ts)), 0, 0)
		if e == syscall.EINTR {
			if d > 0 {
				return 0
			}
			continue
		}
		if e != 0 {
			return 0
		}
		return int(n)
	}
}

// park waits in the runtime's poller for an event of the set, until
// deadline at the latest.
func (s *loopSys) park(deadline time.Time) int {
	if !deadline.After(time.Now()) {
		// A deadline past ends the wait before the poller looks at all:
		// look now.
		return s.poll(0)
	}
	s.polled = 0
	if err := s.epFile.SetReadDeadline(deadline); err != nil {
		return 0
	}
	_ = s.epRC.Read(s.pollFn) // a deadline ends it without events
	return s.polled
}

// handle handles the events of a wake-up.
func (l *Loop) handle(evs []syscall.EpollEvent, now time.Time) {
	s := &l.sys
	for _, ev := range evs {
		if ev.Fd == wakeSlot {
			var v uint64
			_, _, _ = syscall.RawSyscall(syscall.SYS_READ, uintptr(s.wakeFd), uintptr(unsafe.Pointer(&v)), 8)
			s.woken.Store(false)
			continue
		}
		cn := s.conns[ev.Fd]
		if cn == nil {
			continue // closed by an earlier event of this wake-up
		}
		switch {
		case cn.dialing:
			l.connected(cn)
		case ev.Events&syscall.EPOLLOUT != 0 && cn.id >= 0 && cn.wrote < len(l.kinds[s.reqs[cn.id].kind].wire):
			l.write(cn)
			if ev.Events&(syscall.EPOLLIN|syscall.EPOLLRDHUP|syscall.EPOLLHUP|syscall.EPOLLERR) != 0 && cn.fd >= 0 {
				l.readable(cn, now)
			}
		default:
			l.readable(cn, now)
		}
	}
}

// nextDeadline returns the soonest deadline of the loop's: a request's
// timeout, a dial's, an idle connection's end; zero when none.
func (l *Loop) nextDeadline() time.Time {
	s := &l.sys
	var next time.Time
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for len(s.deadlines) > 0 {
		d := s.deadlines[0]
		if s.reqs[d.id].seq == d.seq {
			soonest(d.at)
			break
		}
		s.deadlines.pop() // ended before its deadline
	}
	for _, h := range s.hosts {
		for _, cn := range h.dialing {
			soonest(cn.dialUntil)
		}
		if len(h.idle) > 0 && l.c.opts.IdleTimeout > 0 {
			soonest(h.idle[0].idleSince.Add(l.c.opts.IdleTimeout))
		}
	}
	return next
}

// expire ends what passed its deadline: requests (Timeout), dials (a
// failed dial), idle connections (closed).
func (l *Loop) expire(now time.Time) {
	s := &l.sys
	for len(s.deadlines) > 0 {
		d := s.deadlines[0]
		r := s.reqs[d.id]
		if r.seq != d.seq {
			s.deadlines.pop() // ended before its deadline
			continue
		}
		if d.at.After(now) {
			break
		}
		s.deadlines.pop()
		resp := ErrorResponse(os.ErrDeadlineExceeded)
		if r.cn != nil {
			l.fail(r.cn, resp)
		} else {
			l.end(d.id, resp, now) // still waiting for a connection
		}
	}
	for _, h := range s.hosts {
		for i := 0; i < len(h.dialing); {
			cn := h.dialing[i]
			if cn.dialUntil.After(now) {
				i++
				continue
			}
			l.closeConn(cn) // takes it off h.dialing
			l.failDial(h, &net.OpError{Op: "dial", Net: "tcp", Addr: cn.addr, Err: os.ErrDeadlineExceeded})
		}
		if l.c.opts.IdleTimeout > 0 {
			for len(h.idle) > 0 && !h.idle[0].idleSince.Add(l.c.opts.IdleTimeout).After(now) {
				l.closeConn(h.idle[0])
			}
		}
	}
}

// Close implements loadtest.EventLoop: it abandons the requests in flight,
// reporting none, and closes every connection. The loop can serve again.
func (l *Loop) Close() {
	s := &l.sys
	for _, cn := range s.conns {
		if cn != nil {
			l.closeConn(cn)
		}
	}
	for _, h := range s.hosts {
		h.idle, h.dialing, h.waiting, h.head, h.open = h.idle[:0], h.dialing[:0], h.waiting[:0], 0, 0
	}
	clear(s.reqs)
	s.deadlines = s.deadlines[:0]
	s.done, s.early = nil, nil
}

// deadlineRef is a request's deadline, for the heap.
type deadlineRef struct {
	loopRef
	at time.Time
}

// deadlineHeap is a binary min-heap of deadlines: requests' timeouts may
// differ (Send's), so that the order of sending is not the order of
// expiring. A request that ends before its deadline stays in it until it
// comes to the top (its seq then tells it stale).
type deadlineHeap []deadlineRef

func (h *deadlineHeap) push(d deadlineRef) {
	*h = append(*h, d)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if !a[i].at.Before(a[p].at) {
			break
		}
		a[i], a[p] = a[p], a[i]
		i = p
	}
}

func (h *deadlineHeap) pop() {
	a := *h
	n := len(a) - 1
	a[0] = a[n]
	a[n] = deadlineRef{}
	a = a[:n]
	for i := 0; ; {
		m, l, r := i, 2*i+1, 2*i+2
		if l < n && a[l].at.Before(a[m].at) {
			m = l
		}
		if r < n && a[r].at.Before(a[m].at) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
}
