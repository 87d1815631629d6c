package server

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/headroom-dev/headroom/examples/orch/schema"
)

// hub holds every open mission stream of this process by mission and
// hands each the events of its mission, in the order the LISTEN
// connection got them (for one mission, event id order). A subscriber
// whose queue is full (streamQueue events behind) is dropped: its stream
// sends "event: resync" and ends, and the client reconnects with
// Last-Event-ID.
type hub struct {
	mu       sync.Mutex
	missions map[int64]map[*sub]struct{}
	closed   bool
	held     atomic.Int64
	sent     atomic.Int64
	dropped  atomic.Int64
}

// item is one event, rendered once for every stream.
type item struct {
	id       int64
	terminal bool
	frame    []byte
}

// sub is one held GET /api/missions/{id}/events.
type sub struct {
	mission int64
	items   chan item
	dropped chan struct{} // closed when the hub dropped it (too slow, or LISTEN lost)
	quit    chan struct{} // closed when the hub closes (drain)
}

// streamQueue is how many events a stream may have waiting.
const streamQueue = 64

func newHub() *hub { return &hub{missions: map[int64]map[*sub]struct{}{}} }

// add registers a stream of mission; nil when the hub is closed.
func (h *hub) add(mission int64) *sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	st := &sub{mission: mission, items: make(chan item, streamQueue), dropped: make(chan struct{}), quit: make(chan struct{})}
	set := h.missions[mission]
	if set == nil {
		set = map[*sub]struct{}{}
		h.missions[mission] = set
	}
	set[st] = struct{}{}
	h.held.Add(1)
	return st
}

// removeLocked forgets st; h.mu is held.
func (h *hub) removeLocked(st *sub) bool {
	set := h.missions[st.mission]
	if _, ok := set[st]; !ok {
		return false
	}
	delete(set, st)
	if len(set) == 0 {
		delete(h.missions, st.mission)
	}
	h.held.Add(-1)
	return true
}

func (h *hub) remove(st *sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(st)
}

// watched reports whether any stream of this process follows mission.
func (h *hub) watched(mission int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.missions[mission]) > 0
}

// publish queues it on every stream of mission, dropping the streams
// that are too far behind.
func (h *hub) publish(mission int64, it item) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for st := range h.missions[mission] {
		select {
		case st.items <- it:
			h.sent.Add(1)
		default:
			h.removeLocked(st)
			close(st.dropped)
			h.dropped.Add(1)
		}
	}
}

// dropAll drops every stream (after the LISTEN connection was lost and
// came back: events in between may be missed); each sends a resync.
func (h *hub) dropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, set := range h.missions {
		for st := range set {
			h.removeLocked(st)
			close(st.dropped)
			h.dropped.Add(1)
		}
	}
}

// close tells every stream to end (with "event: shutdown") and refuses new
// ones; it returns the number of streams told.
func (h *hub) close() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0
	}
	h.closed = true
	var n int64
	for _, set := range h.missions {
		for st := range set {
			close(st.quit)
			n++
		}
	}
	return n
}

// eventItem renders an event as an SSE frame:
//
//	id: <event id>
//	event: <kind>
//	data: {"id":…,"mission_id":…,"task_id":…,"kind":…,"written_at":…,"data":{…}}
func eventItem(e Event) item {
	b, _ := json.Marshal(e)
	return item{id: e.ID, terminal: schema.Terminal(e.Kind), frame: fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Kind, b)}
}

func resyncFrame(last int64) []byte {
	return fmt.Appendf(nil, "event: resync\ndata: {\"last_event_id\":%d}\n\n", last)
}

var (
	shutdownFrame  = []byte("event: shutdown\ndata: {}\n\n")
	keepaliveFrame = []byte(": keepalive\n\n")
	connectedFrame = []byte(": connected\n\n")
)
