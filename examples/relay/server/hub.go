package server

import (
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// streamKind says what a held stream listens to.
type streamKind uint8

const (
	userStream      streamKind = iota // GET /mcp or subscriptions/listen: the events of one user
	workspaceStream                   // GET /api/events: the events of one workspace
	numStreamKinds
)

func (k streamKind) String() string {
	if k == userStream {
		return "user"
	}
	return "workspace"
}

// hub holds every open stream and writes events and keepalives to them.
//
// Streams are spread over a fixed number of shards, each with one
// goroutine that owns the writes to its streams: an idle stream costs no
// goroutine of its own. A write that fails or does not finish within the
// write timeout closes that stream; a slow client stalls only its shard,
// for at most the write timeout.
type hub struct {
	shards       []*shard
	next         atomic.Uint64
	keepalive    time.Duration
	writeTimeout time.Duration
	log          *slog.Logger
	held         [numStreamKinds]atomic.Int64
	quit         chan struct{}
	closeOnce    sync.Once
	wg           sync.WaitGroup
	closed       atomic.Bool
	watchOnce    sync.Once
	watcher      *peerWatcher // started by the first hijacked stream; nil off Linux
}

// shard is one part of the hub. mu guards the maps; only the shard's
// goroutine writes to its streams (apart from a stream's own replay).
type shard struct {
	h      *hub
	mu     sync.Mutex
	byUser map[int64]map[*stream]struct{}
	byWS   map[int64]map[*stream]struct{}
	count  int
	events chan *frame
	// scratch is the shard goroutine's reusable list of targets.
	scratch []*stream
}

// newHub starts a hub with one shard per two processors, at least four.
func newHub(keepalive, writeTimeout time.Duration, log *slog.Logger) *hub {
	n := max(4, 2*runtime.GOMAXPROCS(0))
	h := &hub{keepalive: keepalive, writeTimeout: writeTimeout, log: log, quit: make(chan struct{})}
	for range n {
		sh := &shard{h: h, byUser: map[int64]map[*stream]struct{}{}, byWS: map[int64]map[*stream]struct{}{}, events: make(chan *frame, 1024)}
		h.shards = append(h.shards, sh)
		h.wg.Add(1)
		go sh.run()
	}
	return h
}

// watchPeer has the watcher close s as soon as its client leaves.
func (h *hub) watchPeer(s *stream) {
	hw, ok := s.w.(*hijackedWriter)
	if !ok {
		return
	}
	h.watchOnce.Do(func() {
		if !h.closed.Load() {
			h.watcher = newPeerWatcher(func(s *stream) { s.shard.drop(s, nil) })
		}
	})
	if h.watcher == nil {
		return
	}
	tok, err := h.watcher.watch(s, hw.conn)
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		h.watcher.forget(tok)
		return
	}
	hw.watcher, hw.tok = h.watcher, tok
}

// held returns the number of open streams of kind k.
func (h *hub) heldStreams(k streamKind) int64 { return h.held[k].Load() }

// add registers s; it returns false when the hub is closing.
func (h *hub) add(s *stream) bool {
	sh := h.shards[h.next.Add(1)%uint64(len(h.shards))]
	s.shard = sh
	sh.mu.Lock()
	// Checked under the shard's lock: close sets the flag before it takes
	// the locks to collect the streams, so a stream is either refused here
	// or collected there.
	if h.closed.Load() {
		sh.mu.Unlock()
		return false
	}
	m := sh.index(s.kind)
	set := m[s.key]
	if set == nil {
		set = map[*stream]struct{}{}
		m[s.key] = set
	}
	set[s] = struct{}{}
	sh.count++
	sh.mu.Unlock()
	h.held[s.kind].Add(1)
	return true
}

// publish hands ev to every shard that holds a stream it goes to (so
// shards without one are not woken). It blocks while a shard's queue is
// full.
func (h *hub) publish(ev event) {
	var f *frame
	for _, sh := range h.shards {
		if !sh.wants(ev.UserID, ev.WorkspaceID) {
			continue
		}
		if f == nil {
			f = newFrame(ev)
		}
		select {
		case sh.events <- f:
		case <-h.quit:
			return
		}
	}
}

// close stops the shards, writes final to every stream and closes them.
func (h *hub) close(final *frame) {
	h.closeOnce.Do(func() {
		h.closed.Store(true)
		close(h.quit)
		h.wg.Wait()
		for _, sh := range h.shards {
			for _, s := range sh.all(nil) {
				sh.drop(s, final)
			}
		}
		h.watchOnce.Do(func() {}) // no watcher starts after this
		if h.watcher != nil {
			h.watcher.close()
		}
	})
}

func (sh *shard) index(k streamKind) map[int64]map[*stream]struct{} {
	if k == userStream {
		return sh.byUser
	}
	return sh.byWS
}

// remove unregisters s; it reports whether s was registered.
func (sh *shard) remove(s *stream) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	m := sh.index(s.kind)
	set := m[s.key]
	if _, ok := set[s]; !ok {
		return false
	}
	delete(set, s)
	if len(set) == 0 {
		delete(m, s.key)
	}
	sh.count--
	sh.h.held[s.kind].Add(-1)
	return true
}

// drop unregisters and closes s, writing final first when not nil.
func (sh *shard) drop(s *stream, final *frame) {
	sh.remove(s)
	s.close(final, sh.h.writeTimeout)
}

// all appends every stream of the shard to dst.
func (sh *shard) all(dst []*stream) []*stream {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, m := range []map[int64]map[*stream]struct{}{sh.byUser, sh.byWS} {
		for _, set := range m {
			for s := range set {
				dst = append(dst, s)
			}
		}
	}
	return dst
}

// wants reports whether the shard holds a stream of the user or the workspace.
func (sh *shard) wants(userID, workspaceID int64) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return len(sh.byUser[userID]) > 0 || len(sh.byWS[workspaceID]) > 0
}

// targets appends the streams f goes to: its user's and its workspace's.
func (sh *shard) targets(dst []*stream, f *frame) []*stream {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for s := range sh.byUser[f.userID] {
		dst = append(dst, s)
	}
	for s := range sh.byWS[f.workspaceID] {
		dst = append(dst, s)
	}
	return dst
}

// run is the shard's goroutine: events as they come, keepalives on a
// ticker whose phase is random so shards do not all sweep at once.
func (sh *shard) run() {
	defer sh.h.wg.Done()
	h := sh.h
	first := time.NewTimer(time.Duration(rand.Int64N(int64(h.keepalive))) + 1)
	defer first.Stop()
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	var tick <-chan time.Time
	for {
		select {
		case <-h.quit:
			return
		case f := <-sh.events:
			sh.scratch = sh.targets(sh.scratch[:0], f)
			sh.writeAll(f, false)
		case <-first.C:
			ticker = time.NewTicker(h.keepalive)
			tick = ticker.C
			sh.sweep()
		case <-tick:
			sh.sweep()
		}
	}
}

// sweep writes a keepalive to every stream, first closing streams whose
// client has gone.
func (sh *shard) sweep() {
	sh.scratch = sh.all(sh.scratch[:0])
	sh.writeAll(keepaliveFrame, true)
}

// writeAll writes f to the streams in scratch and drops those that fail.
func (sh *shard) writeAll(f *frame, checkPeer bool) {
	for i, s := range sh.scratch {
		if err := s.send(f, sh.h.writeTimeout, checkPeer); err != nil {
			sh.h.log.Debug("relay: closing stream", "kind", s.kind.String(), "key", s.key, "err", err)
			sh.drop(s, nil)
		}
		sh.scratch[i] = nil
	}
}
