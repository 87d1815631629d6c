package server

import (
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeWriter records what a stream is sent.
type fakeWriter struct {
	mu     sync.Mutex
	frames []string
	fail   bool // writes fail
	gone   bool // the client has left
	closed *frame
	ended  bool
}

func (w *fakeWriter) write(f *frame, _ time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fail {
		return errors.New("broken pipe")
	}
	w.frames = append(w.frames, string(f.raw))
	return nil
}

func (w *fakeWriter) peerGone() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.gone }

func (w *fakeWriter) close(final *frame, _ time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed, w.ended = final, true
}

func (w *fakeWriter) isEnded() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.ended }

func (w *fakeWriter) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.frames...)
}

func newTestStream(h *hub, kind streamKind, key int64, set ...func(*fakeWriter)) (*stream, *fakeWriter) {
	w := &fakeWriter{}
	for _, f := range set {
		f(w)
	}
	s := &stream{kind: kind, key: key, w: w}
	h.add(s)
	return s, w
}

func TestHubRoutesEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(time.Hour, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
		defer h.close(nil)
		_, u1 := newTestStream(h, userStream, 1)
		_, u2 := newTestStream(h, userStream, 2)
		_, ws10 := newTestStream(h, workspaceStream, 10)
		_, ws20 := newTestStream(h, workspaceStream, 20)
		h.publish(event{ID: 5, WorkspaceID: 10, UserID: 1, Kind: "call", Payload: "{}"})
		synctest.Wait()
		ev := string(newFrame(event{ID: 5, WorkspaceID: 10, UserID: 1, Kind: "call", Payload: "{}"}).raw)
		assert.Equal(t, []string{ev}, u1.got(), "the user's stream")
		assert.Empty(t, u2.got(), "another user's stream")
		assert.Equal(t, []string{ev}, ws10.got(), "the workspace's feed")
		assert.Empty(t, ws20.got(), "another workspace's feed")
		assert.EqualValues(t, 2, h.heldStreams(userStream))
		assert.EqualValues(t, 2, h.heldStreams(workspaceStream))
	})
}

func TestHubKeepalivesAndDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(15*time.Second, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
		_, ok := newTestStream(h, userStream, 1)
		_, broken := newTestStream(h, userStream, 2, func(w *fakeWriter) { w.fail = true })
		_, left := newTestStream(h, workspaceStream, 3, func(w *fakeWriter) { w.gone = true })

		time.Sleep(15 * time.Second) // every shard has swept once by now
		synctest.Wait()
		assert.Equal(t, []string{": keepalive\n\n"}, ok.got())
		assert.True(t, broken.isEnded(), "a failed write closes the stream")
		assert.True(t, left.isEnded(), "a stream whose client left is closed before the write")
		assert.Empty(t, left.got())
		assert.EqualValues(t, 1, h.heldStreams(userStream))
		assert.EqualValues(t, 0, h.heldStreams(workspaceStream))

		time.Sleep(15 * time.Second)
		synctest.Wait()
		assert.Len(t, ok.got(), 2, "one keepalive per interval")

		h.close(shutdownFrame)
		assert.True(t, ok.isEnded())
		assert.Same(t, shutdownFrame, ok.closed, "the final event")
		assert.EqualValues(t, 0, h.heldStreams(userStream))
		assert.False(t, h.add(&stream{w: &fakeWriter{}}), "a closed hub takes no stream")
	})
}

func TestStreamReplayQueuesLiveEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHub(time.Hour, time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
		defer h.close(nil)
		w := &fakeWriter{}
		s := &stream{kind: userStream, key: 1, w: w, replaying: true}
		h.add(s)
		ev := func(id int64) event { return event{ID: id, WorkspaceID: 10, UserID: 1, Kind: "call", Payload: "{}"} }
		h.publish(ev(3)) // live while replaying: queued
		h.publish(ev(4))
		synctest.Wait()
		assert.Empty(t, w.got(), "nothing written by the hub during the replay")
		assert.NoError(t, s.sendReplayed(newFrame(ev(2)), time.Second))
		assert.NoError(t, s.sendReplayed(newFrame(ev(3)), time.Second))
		assert.NoError(t, s.finishReplay(map[int64]bool{2: true, 3: true}, time.Second))
		h.publish(ev(5))
		synctest.Wait()
		var ids []string
		for _, f := range w.got() {
			ids = append(ids, f[:5])
		}
		assert.Equal(t, []string{"id: 2", "id: 3", "id: 4", "id: 5"}, ids, "in order, each once")
	})
}
