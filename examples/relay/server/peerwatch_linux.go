package server

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
)

// peerWatcher finds hijacked streams whose client has gone as soon as it
// goes, without a goroutine per stream: one goroutine waits in epoll_wait
// on an epoll set holding every stream's socket, armed once
// (EPOLLONESHOT) for the peer's FIN (EPOLLRDHUP), a reset or an error.
// The runtime's own poller keeps the sockets too; an fd may be in several
// epoll sets.
type peerWatcher struct {
	epfd   int
	gone   func(*stream)
	next   atomic.Uint64
	mu     sync.Mutex
	tokens map[uint64]*stream
	quit   atomic.Bool
	done   chan struct{}
}

// newPeerWatcher starts the watcher; gone is called (from its goroutine)
// for each stream whose client left. It returns nil when epoll is not
// available: then gone clients are found by the keepalive sweep.
func newPeerWatcher(gone func(*stream)) *peerWatcher {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	w := &peerWatcher{epfd: fd, gone: gone, tokens: map[uint64]*stream{}, done: make(chan struct{})}
	go w.run()
	return w
}

// watch adds conn, the socket of s; it returns the token to unwatch with.
func (w *peerWatcher) watch(s *stream, conn net.Conn) (uint64, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	tok := w.next.Add(1)
	// Held across the registration, so that close cannot close the epoll
	// fd under it.
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.quit.Load() {
		return 0, errors.New("the watcher is closed")
	}
	w.tokens[tok] = s
	var cerr error
	err = rc.Control(func(fd uintptr) {
		ev := syscall.EpollEvent{Events: syscall.EPOLLRDHUP | syscall.EPOLLHUP | syscall.EPOLLERR | syscall.EPOLLONESHOT,
			Fd: int32(tok), Pad: int32(tok >> 32)}
		cerr = syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err == nil {
		err = cerr
	}
	if err != nil {
		delete(w.tokens, tok)
		return 0, err
	}
	return tok, nil
}

// unwatch removes conn from the set; call it before closing conn.
func (w *peerWatcher) unwatch(tok uint64, conn net.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.tokens, tok)
	if w.quit.Load() {
		return
	}
	if sc, ok := conn.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, int(fd), nil) })
		}
	}
}

func (w *peerWatcher) forget(tok uint64) {
	w.mu.Lock()
	delete(w.tokens, tok)
	w.mu.Unlock()
}

func (w *peerWatcher) run() {
	defer close(w.done)
	events := make([]syscall.EpollEvent, 128)
	for !w.quit.Load() {
		// A one-second timeout lets close stop the loop.
		n, err := syscall.EpollWait(w.epfd, events, 1000)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return
		}
		for _, ev := range events[:n] {
			tok := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			w.mu.Lock()
			s := w.tokens[tok]
			w.mu.Unlock()
			if s != nil {
				w.forget(tok)
				w.gone(s)
			}
		}
	}
}

// close stops the watcher.
func (w *peerWatcher) close() {
	w.mu.Lock()
	w.quit.Store(true)
	w.mu.Unlock()
	<-w.done
	syscall.Close(w.epfd)
}
