package sse_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// callTarget answers every stream 200 and then writes what the test sends
// on events (whole events, "data: {}\n\n"), until the client closes.
func callTarget(events <-chan string) *pipeTarget {
	return &pipeTarget{serve: func(_ int, _ string, c net.Conn) {
		_, _ = io.WriteString(c, okHead)
		gone := make(chan struct{})
		go func() { hold(c); close(gone) }()
		for {
			select {
			case ev := <-events:
				if _, err := io.WriteString(c, ev); err != nil {
					return
				}
			case <-gone:
				return
			}
		}
	}}
}

const callEvent = "event: call\ndata: {}\n\n"

// send has the target write ev and waits until the stream has handled it.
func send(events chan<- string, ev string) {
	events <- ev
	synctest.Wait()
}

func TestDelivery_EveryEventDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		events := make(chan string)
		g := newGroup(t, sse.Config{Dial: callTarget(events).dial, Sink: rec})
		s := g.Open(t.Context())
		synctest.Wait()
		// Three calls, each announced 300 ms after the client saw it complete.
		for range 3 {
			s.Expect(1)
			time.Sleep(300 * time.Millisecond)
			send(events, callEvent)
			time.Sleep(5 * time.Second)
		}
		time.Sleep(time.Minute) // long past every deadline
		synctest.Wait()

		d := rec.get(sse.KindDelivery)
		require.Len(t, d, 3, "one sample per expected event")
		for _, x := range d {
			assert.Equal(t, loadtest.OK, x.resp.Outcome)
			assert.Equal(t, 300*time.Millisecond, x.latency, "expectation to receipt")
		}
		st := s.Stats()
		assert.Equal(t, int64(3), st.Expected)
		assert.Equal(t, int64(3), st.Delivered)
		assert.Equal(t, int64(0), st.Missing)
		assert.Equal(t, int64(0), st.Overdue)
		s.Close()
		assert.Len(t, rec.get(sse.KindDelivery), 3, "Close adds nothing")
	})
}

// The regression: a target that completes calls but never announces them
// on the stream is caught while the stream is held, one AppError per
// missing event, exactly DeliveryTimeout after each was expected — inside
// the step, before any Close.
func TestDelivery_MissingEventsJudgedWhileHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		target := &pipeTarget{serve: func(_ int, _ string, c net.Conn) {
			_, _ = io.WriteString(c, okHead)
			hold(c) // completes calls elsewhere, never emits their events
		}}
		g := newGroup(t, sse.Config{Dial: target.dial, Sink: rec})
		s := g.Open(t.Context())
		synctest.Wait()
		s.Expect(1) // t = 0
		time.Sleep(3 * time.Second)
		s.Expect(2) // t = 3 s
		time.Sleep(sse.DefaultDeliveryTimeout - 3*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Empty(t, rec.get(sse.KindDelivery), "nothing is judged before DeliveryTimeout")

		time.Sleep(time.Millisecond) // t = 10 s: the first is due
		synctest.Wait()
		d := rec.get(sse.KindDelivery)
		require.Len(t, d, 1)
		assert.Equal(t, loadtest.AppError, d[0].resp.Outcome)
		assert.Equal(t, sse.DefaultDeliveryTimeout, d[0].latency, "the time waited")
		assert.ErrorContains(t, d[0].resp.Err, "sse: an event expected 10s ago (at ")
		assert.ErrorContains(t, d[0].resp.Err, "has not arrived; stream connected, 0 delivered, 3 missing")

		time.Sleep(3 * time.Second) // t = 13 s: the other two are due
		synctest.Wait()
		d = rec.get(sse.KindDelivery)
		require.Len(t, d, 3)
		for _, x := range d[1:] {
			assert.Equal(t, loadtest.AppError, x.resp.Outcome)
			assert.Equal(t, sse.DefaultDeliveryTimeout, x.latency)
			assert.ErrorContains(t, x.resp.Err, "2 events expected 10s ago")
		}
		st := s.Stats()
		assert.Equal(t, int64(1), st.Connected, "judged while the stream is held")
		assert.Equal(t, int64(3), st.Expected)
		assert.Equal(t, int64(0), st.Delivered)
		assert.Equal(t, int64(3), st.Missing)
		assert.Equal(t, int64(3), st.Overdue)
		s.Close()
		assert.Len(t, rec.get(sse.KindDelivery), 3, "Close judges nothing twice")
	})
}

func TestDelivery_EventsBeforeExpectAreCredited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		events := make(chan string)
		g := newGroup(t, sse.Config{Dial: callTarget(events).dial, Sink: rec})
		s := g.Open(t.Context())
		synctest.Wait()
		// The target announces two calls before the client sees them end.
		send(events, callEvent)
		send(events, callEvent)
		time.Sleep(time.Second)
		s.Expect(3)
		d := rec.get(sse.KindDelivery)
		require.Len(t, d, 2, "the two events already received count at once")
		for _, x := range d {
			assert.Equal(t, loadtest.OK, x.resp.Outcome)
			assert.Equal(t, time.Duration(0), x.latency)
		}
		time.Sleep(2 * time.Second)
		send(events, callEvent)
		d = rec.get(sse.KindDelivery)
		require.Len(t, d, 3)
		assert.Equal(t, loadtest.OK, d[2].resp.Outcome)
		assert.Equal(t, 2*time.Second, d[2].latency)
		st := s.Close()
		assert.Equal(t, int64(3), st.Delivered)
		assert.Equal(t, int64(0), st.Missing)
	})
}

func TestDelivery_ExpectID(t *testing.T) {
	tests := []struct {
		name     string
		trackIDs bool
		before   []string // ids the target sends before ExpectID
		id       string
		after    []string // ids the target sends 500 ms after ExpectID
		want     loadtest.Outcome
		latency  time.Duration
	}{
		// A tracked id that came before it was expected is delivered at once.
		{"tracked-before", true, []string{"e1"}, "e1", nil, loadtest.OK, 0},
		// An id that comes after: the latency is the wait.
		{"after", false, []string{"e1"}, "e2", []string{"e2"}, loadtest.OK, 500 * time.Millisecond},
		// Other ids never satisfy it: judged missing after DeliveryTimeout.
		{"never", false, nil, "e9", []string{"e1", "e2"}, loadtest.AppError, sse.DefaultDeliveryTimeout},
		// Without tracking, an id that came before it was expected is missing.
		{"untracked-before", false, []string{"e1"}, "e1", nil, loadtest.AppError, sse.DefaultDeliveryTimeout},
	}
	for _, tt := range tests {
		t.Run("case="+tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &sink{}
				events := make(chan string)
				g := newGroup(t, sse.Config{Dial: callTarget(events).dial, Sink: rec, TrackIDs: tt.trackIDs})
				s := g.Open(t.Context())
				synctest.Wait()
				for _, id := range tt.before {
					send(events, "id: "+id+"\ndata: {}\n\n")
				}
				s.ExpectID(tt.id)
				time.Sleep(500 * time.Millisecond)
				for _, id := range tt.after {
					send(events, "id: "+id+"\ndata: {}\n\n")
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				d := rec.get(sse.KindDelivery)
				require.Len(t, d, 1)
				assert.Equal(t, tt.want, d[0].resp.Outcome)
				assert.Equal(t, tt.latency, d[0].latency)
				if tt.want != loadtest.OK {
					assert.ErrorContains(t, d[0].resp.Err, fmt.Sprintf("event id %q expected 10s ago", tt.id))
				}
				st := s.Close()
				assert.Equal(t, int64(1), st.Expected)
				assert.Equal(t, st.Expected, st.Delivered+st.Missing)
			})
		})
	}
}

// When the stream stops, by Close or because its context ended (the user
// left), an expectation not yet due is not judged; one already overdue
// was judged when it fell due.
func TestDelivery_StopLeavesPendingUnjudged(t *testing.T) {
	for _, stop := range []string{"close", "cancel"} {
		t.Run("stop="+stop, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &sink{}
				events := make(chan string)
				g := newGroup(t, sse.Config{Dial: callTarget(events).dial, Sink: rec})
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				s := g.Open(ctx)
				synctest.Wait()
				s.Expect(1) // t = 0, due at 10 s
				time.Sleep(12 * time.Second)
				s.Expect(1) // t = 12 s, due at 22 s
				time.Sleep(5 * time.Second)
				if stop == "close" {
					s.Close()
				} else {
					cancel()
					<-s.Done()
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				assert.Equal(t, []loadtest.Outcome{loadtest.AppError}, rec.outcomes(sse.KindDelivery), "only the overdue one")
				st := s.Close()
				assert.Equal(t, []loadtest.Outcome{loadtest.AppError}, rec.outcomes(sse.KindDelivery))
				assert.Equal(t, int64(2), st.Missing, "the unjudged one still counts as missing")
				assert.Equal(t, int64(1), st.Overdue)
			})
		})
	}
}

// A negative DeliveryTimeout leaves judgement to Close.
func TestDelivery_NoDeadlineJudgesAtClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		events := make(chan string)
		g := newGroup(t, sse.Config{Dial: callTarget(events).dial, Sink: rec, DeliveryTimeout: -1})
		s := g.Open(t.Context())
		synctest.Wait()
		s.Expect(3)
		send(events, callEvent)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, []loadtest.Outcome{loadtest.OK}, rec.outcomes(sse.KindDelivery), "no deadline")
		st := s.Close()
		d := rec.get(sse.KindDelivery)
		require.Len(t, d, 3)
		for _, x := range d[1:] {
			assert.Equal(t, loadtest.AppError, x.resp.Outcome)
			assert.ErrorContains(t, x.resp.Err, "2 events expected 1m0s ago")
		}
		assert.Equal(t, int64(2), st.Overdue)
		assert.Equal(t, int64(2), st.Missing)
	})
}

// An expectation judged overdue is final: its late event is credited to
// the next expectation, as the next call's event would be.
func TestDelivery_LateEventIsCredit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		events := make(chan string)
		g := newGroup(t, sse.Config{Dial: callTarget(events).dial, Sink: rec, DeliveryTimeout: time.Second})
		s := g.Open(t.Context())
		synctest.Wait()
		s.Expect(1)
		time.Sleep(3 * time.Second)
		send(events, callEvent) // 2 s late
		s.Expect(1)
		assert.Equal(t, []loadtest.Outcome{loadtest.AppError, loadtest.OK}, rec.outcomes(sse.KindDelivery))
		st := s.Close()
		assert.Equal(t, int64(1), st.Delivered)
		assert.Equal(t, int64(1), st.Overdue)
	})
}

// A stream the target ended (204) still judges what it was expected to
// deliver, and says the stream ended.
func TestDelivery_EndedStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		target := &pipeTarget{serve: func(_ int, _ string, c net.Conn) {
			_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		}}
		g := newGroup(t, sse.Config{Dial: target.dial, Sink: rec})
		s := g.Open(t.Context())
		<-s.Done()
		s.Expect(1)
		time.Sleep(sse.DefaultDeliveryTimeout)
		synctest.Wait()
		d := rec.get(sse.KindDelivery)
		require.Len(t, d, 1)
		assert.ErrorContains(t, d[0].resp.Err, "stream ended")
		s.Close()
	})
}

func TestDelivery_GroupCounters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		events := make(chan string)
		g := newGroup(t, sse.Config{Dial: callTarget(events).dial, Sink: rec})
		a, b := g.Open(t.Context()), g.Open(t.Context())
		synctest.Wait()
		a.Expect(2)
		b.Expect(1)
		send(events, callEvent) // to whichever stream's server reads first
		time.Sleep(sse.DefaultDeliveryTimeout)
		synctest.Wait()
		st := g.Stats()
		assert.Equal(t, int64(3), st.Expected)
		assert.Equal(t, int64(1), st.Delivered)
		assert.Equal(t, int64(2), st.Missing)
		assert.Equal(t, int64(2), st.Overdue)
		assert.Equal(t, st.Expected, a.Stats().Expected+b.Stats().Expected)
		assert.Equal(t, st.Missing, a.Stats().Missing+b.Stats().Missing)
		g.Close()
		assert.Len(t, rec.get(sse.KindDelivery), 3)
	})
}
