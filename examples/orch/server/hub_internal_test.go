package server

import (
	"testing"
)

// TestHubDropsSlowSubscriber: a stream that has streamQueue events
// waiting is dropped on the next one (its dropped channel closes, it leaves
// the hub), while a stream that keeps up gets every event.
func TestHubDropsSlowSubscriber(t *testing.T) {
	h := newHub()
	slow, quick := h.add(7), h.add(7)
	other := h.add(8)
	for i := range streamQueue + 1 {
		h.publish(7, item{id: int64(i + 1)})
		<-quick.items
	}
	select {
	case <-slow.dropped:
	default:
		t.Fatal("the slow stream was not dropped")
	}
	select {
	case <-quick.dropped:
		t.Fatal("the quick stream was dropped")
	default:
	}
	if got := len(slow.items); got != streamQueue {
		t.Errorf("slow stream holds %d events, want %d", got, streamQueue)
	}
	if len(other.items) != 0 {
		t.Error("another mission's stream got events")
	}
	if h.held.Load() != 2 || h.dropped.Load() != 1 {
		t.Errorf("held %d dropped %d, want 2 and 1", h.held.Load(), h.dropped.Load())
	}
	h.publish(7, item{id: 100})
	if len(slow.items) != streamQueue {
		t.Error("a dropped stream still gets events")
	}
	h.remove(slow) // the handler's deferred remove is harmless after a drop
	if h.held.Load() != 2 {
		t.Errorf("held %d after removing a dropped stream, want 2", h.held.Load())
	}
}
