package server

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/headroom-dev/headroom/examples/desk/schema"
)

// hub holds every open live stream by unit and hands each the changes of
// its unit. A stream's events wait in a small queue; when the queue is
// full the event is dropped and the stream is sent a resync event once it
// catches up, telling the client to reload (nothing is lost silently).
type hub struct {
	mu      sync.Mutex
	units   map[int64]map[*stream]struct{}
	closed  bool
	held    atomic.Int64
	sent    atomic.Int64
	dropped atomic.Int64
}

// stream is one held GET /api/stream.
type stream struct {
	agent  int64
	unit   int64
	events chan []byte
	missed atomic.Bool   // an event was dropped: send a resync
	quit   chan struct{} // closed when the hub closes (drain)
}

// streamQueue is the number of events a stream may have waiting.
const streamQueue = 32

func newHub() *hub { return &hub{units: map[int64]map[*stream]struct{}{}} }

// add registers a stream of p; nil when the hub is closed (draining).
func (h *hub) add(p principal) *stream {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	st := &stream{agent: p.AgentID, unit: p.UnitID, events: make(chan []byte, streamQueue), quit: make(chan struct{})}
	set := h.units[p.UnitID]
	if set == nil {
		set = map[*stream]struct{}{}
		h.units[p.UnitID] = set
	}
	set[st] = struct{}{}
	h.held.Add(1)
	return st
}

func (h *hub) remove(st *stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.units[st.unit]
	if _, ok := set[st]; !ok {
		return
	}
	delete(set, st)
	if len(set) == 0 {
		delete(h.units, st.unit)
	}
	h.held.Add(-1)
}

// publish queues frame on every stream of unit (all of them when unit is 0).
func (h *hub) publish(unit int64, frame []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	send := func(set map[*stream]struct{}) {
		for st := range set {
			select {
			case st.events <- frame:
				h.sent.Add(1)
			default:
				st.missed.Store(true)
				h.dropped.Add(1)
			}
		}
	}
	if unit != 0 {
		send(h.units[unit])
		return
	}
	for _, set := range h.units {
		send(set)
	}
}

// close tells every stream to end (it sends the final event) and refuses
// new ones; it returns the number of streams told.
func (h *hub) close() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0
	}
	h.closed = true
	var n int64
	for _, set := range h.units {
		for st := range set {
			close(st.quit)
			n++
		}
	}
	return n
}

// changeEvent is the data of an "event: change" frame: a case of the
// agent's unit changed, and with it the views listed and the counts.
type changeEvent struct {
	UnitID     int64    `json:"unit_id"`
	CaseID     int64    `json:"case_id"`
	Kind       string   `json:"kind"`
	Status     string   `json:"status"`
	AssigneeID *int64   `json:"assignee_id"`
	Views      []string `json:"views"`
	WrittenAt  string   `json:"written_at,omitempty"`
}

// changeFrame renders c as an SSE frame. Views: "open" when the case is
// open, then "unassigned" or "mine" (for the assignee).
func changeFrame(c change) []byte {
	ev := changeEvent{UnitID: c.Unit, CaseID: c.Case, Kind: c.Kind, Status: c.Status, AssigneeID: c.Assignee, Views: []string{}, WrittenAt: c.WrittenAt}
	for _, s := range schema.OpenStatuses {
		if c.Status == s {
			ev.Views = append(ev.Views, schema.ViewOpen)
			if c.Assignee == nil {
				ev.Views = append(ev.Views, schema.ViewUnassigned)
			} else {
				ev.Views = append(ev.Views, schema.ViewMine)
			}
		}
	}
	b, _ := json.Marshal(ev)
	return append(append([]byte("event: change\ndata: "), b...), "\n\n"...)
}

var (
	resyncFrame    = []byte("event: resync\ndata: {}\n\n")
	shutdownFrame  = []byte("event: shutdown\ndata: {}\n\n")
	keepaliveFrame = []byte(": keepalive\n\n")
)
