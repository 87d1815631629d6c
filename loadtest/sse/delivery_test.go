package sse_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
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

// recordOnly hides a Sink's Begin: samples are recorded when their fate is
// known, as with any Sink that cannot begin observations.
type recordOnly struct{ loadtest.Sink }

// okCall is a tool call the target completes at once.
func okCall(context.Context) loadtest.Response { return loadtest.Response{Outcome: loadtest.OK} }

// caller is a Users behaviour: the user holds a stream with itself as Sink
// (hidden behind recordOnly when observe is false) and calls every second
// from 0.5 s, expecting one event per call, which the target announces
// after delay, or never when delay is 0.
func caller(observe bool, delay time.Duration) func(u *loadtest.User) {
	return func(u *loadtest.User) {
		events := make(chan string, 64)
		var sink loadtest.Sink = u
		if !observe {
			sink = recordOnly{u}
		}
		g, err := sse.NewGroup(sse.Config{URL: "http://127.0.0.1:9/events", Dial: callTarget(events).dial, Sink: sink})
		if err != nil {
			panic(err)
		}
		s := g.Open(u.Context())
		defer s.Close()
		if !u.Sleep(500 * time.Millisecond) {
			return
		}
		for {
			u.Do("call", okCall)
			s.Expect(1)
			if delay > 0 {
				u.Go(func(ctx context.Context) {
					select {
					case <-time.After(delay):
						events <- callEvent
					case <-ctx.Done():
					}
				})
			}
			if !u.Sleep(time.Second) {
				return
			}
		}
	}
}

// TestDelivery_SamplesBelongToTheStepOfTheirCall is the regression for
// delivery samples judged after the hold: with holds (5 s) shorter than
// DeliveryTimeout (10 s), each step's KindDelivery holds one sample per
// call made during its hold — AppError when the target never announces the
// call, OK when it announces it late, during the drain — and none of the
// calls made in another step or between steps. Through a Sink that cannot
// begin observations, samples fall in the window open when their fate is
// known: those of the first step are lost or counted in the next.
func TestDelivery_SamplesBelongToTheStepOfTheirCall(t *testing.T) {
	const users = 2
	tests := []struct {
		sink    string        // "user", or "record-only" to hide its Begin
		delay   time.Duration // from a call to its event; 0: never
		want    [2]map[loadtest.Outcome]int64
		latency time.Duration
	}{
		// Calls at 0.5…4.5 s, judged at 10.5…14.5 s, in the first step's
		// drain; the second step's hold starts after them (14.75 s) and has
		// its own five calls per user.
		{"user", 0, [2]map[loadtest.Outcome]int64{{loadtest.AppError: 5 * users}, {loadtest.AppError: 5 * users}}, sse.DefaultDeliveryTimeout},
		// Announced 7 s late: at 7.5…11.5 s, in the first step's drain.
		{"user", 7 * time.Second, [2]map[loadtest.Outcome]int64{{loadtest.OK: 5 * users}, {loadtest.OK: 5 * users}}, 7 * time.Second},
		// Before steps waited for delivery: the first step's misses fall
		// between the steps (10.5…14.5 s, the second hold is 5.25…10.25 s).
		{"record-only", 0, [2]map[loadtest.Outcome]int64{{}, {}}, 0},
		// The first step's late events (7.5, 8.5, 9.5 s) count in the second.
		{"record-only", 7 * time.Second, [2]map[loadtest.Outcome]int64{{}, {loadtest.OK: 3 * users}}, 7 * time.Second},
	}
	for _, tt := range tests {
		target := "silent"
		if tt.delay > 0 {
			target = "late"
		}
		t.Run("sink="+tt.sink+"/target="+target, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res, err := loadtest.Run(t.Context(), loadtest.Scenario{
					Workload: &loadtest.Users{Kinds: []string{"call", sse.KindDelivery}, Behavior: caller(tt.sink == "user", tt.delay)},
					Plan: loadtest.Ladder{Steps: []loadtest.Step{
						{Level: users, Hold: 5 * time.Second},
						{Level: users, Ramp: 250 * time.Millisecond, Hold: 5 * time.Second},
					}},
					Drain: 15 * time.Second,
				})
				require.NoError(t, err)
				require.Len(t, res.Steps, 2)
				for i, s := range res.Steps {
					calls, d := s.Kind("call"), s.Kind(sse.KindDelivery)
					require.NotNil(t, d)
					assert.Equal(t, int64(5*users), calls.Total(), "step %d: calls during the hold", i)
					assert.Equal(t, tt.want[i], d.Outcomes, "step %d", i)
					if d.Total() == 0 {
						continue
					}
					assert.True(t, d.Observed)
					assert.InEpsilon(t, float64(tt.latency), float64(d.Latency.P50), 0.001, "step %d", i)
					assert.InEpsilon(t, float64(tt.latency), float64(d.Latency.Max), 0.001, "step %d", i)
					if tt.delay == 0 {
						require.NotEmpty(t, d.Errors)
						assert.Contains(t, d.Errors[0], "app_error: sse: an event expected 10s ago (at ")
						assert.Contains(t, d.Errors[0], "has not arrived; stream connected")
					}
				}
			})
		})
	}
}

// An expectation not yet due when its stream stops is abandoned: its step
// neither records it nor waits for it. One already judged counts.
func TestDelivery_StopAbandonsPendingObservation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		res, err := loadtest.Run(t.Context(), loadtest.Scenario{
			Workload: &loadtest.Users{Kinds: []string{sse.KindDelivery}, Behavior: func(u *loadtest.User) {
				g, err := sse.NewGroup(sse.Config{URL: "http://127.0.0.1:9/events", Dial: callTarget(nil).dial, Sink: u})
				if err != nil {
					panic(err)
				}
				s := g.Open(u.Context())
				u.Sleep(500 * time.Millisecond)
				s.Expect(1) // due at 10.5 s
				u.Sleep(6 * time.Second)
				s.Expect(1) // due at 16.5 s
				u.Sleep(5 * time.Second)
				s.Close() // at 11.5 s
				u.Sleep(time.Hour)
			}},
			Plan:  loadtest.Ladder{Steps: []loadtest.Step{{Level: 3, Hold: 20 * time.Second}}},
			Drain: 15 * time.Second,
		})
		require.NoError(t, err)
		d := res.Steps[0].Kind(sse.KindDelivery)
		require.NotNil(t, d)
		assert.Equal(t, map[loadtest.Outcome]int64{loadtest.AppError: 3}, d.Outcomes, "the judged ones only; no timeouts")
		assert.Less(t, time.Since(start), 21*time.Second, "the step did not wait for the abandoned ones")
	})
}

// ExpectID observations: a repeated id is one observation per repetition,
// all ended by its event; an id never sent and an Expect(3) never met are
// judged missing with today's errors, in the step of their call.
func TestDelivery_ExpectIDObservedInItsStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res, err := loadtest.Run(t.Context(), loadtest.Scenario{
			Workload: &loadtest.Users{Kinds: []string{sse.KindDelivery}, Behavior: func(u *loadtest.User) {
				events := make(chan string, 1)
				g, err := sse.NewGroup(sse.Config{URL: "http://127.0.0.1:9/events", Dial: callTarget(events).dial, Sink: u})
				if err != nil {
					panic(err)
				}
				s := g.Open(u.Context())
				defer s.Close()
				u.Sleep(500 * time.Millisecond)
				s.ExpectID("a")
				s.ExpectID("b") // never sent
				u.Sleep(time.Second)
				s.ExpectID("a") // a repetition, 1 s later
				s.Expect(3)     // never met: ids do not count
				u.Sleep(6 * time.Second)
				events <- "id: a\ndata: {}\n\n" // at 7.5 s, after the hold
				u.Sleep(time.Hour)
			}},
			Plan:  loadtest.Ladder{Steps: []loadtest.Step{{Level: 1, Hold: 5 * time.Second}}},
			Drain: 15 * time.Second,
		})
		require.NoError(t, err)
		d := res.Steps[0].Kind(sse.KindDelivery)
		require.NotNil(t, d)
		assert.Equal(t, map[loadtest.Outcome]int64{loadtest.OK: 2, loadtest.AppError: 4}, d.Outcomes)
		// "a" waited 7 s, its repetition 6 s (from its own call); the four
		// misses 10 s each.
		assert.InEpsilon(t, float64(7*time.Second+6*time.Second+4*sse.DefaultDeliveryTimeout)/6, float64(d.Latency.Mean), 0.001)
		assert.InEpsilon(t, float64(sse.DefaultDeliveryTimeout), float64(d.Latency.Max), 0.001)
		errs := strings.Join(d.Errors, "\n")
		assert.Contains(t, errs, `event id "b" expected 10s ago`)
		assert.Contains(t, errs, "3 events expected 10s ago (at ")
		assert.Contains(t, errs, "have not arrived; stream connected, 2 delivered, 4 missing")
	})
}

// With Match, only the events that match count for expectations: a connect
// frame and pings on the same stream neither satisfy one nor bank credit.
func TestDelivery_MatchCountsOnlyMatchingEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		target := &pipeTarget{serve: func(_ int, _ string, c net.Conn) {
			_, _ = io.WriteString(c, okHead+"data: {\"connect\":{}}\n\ndata: {}\n\n")
			time.Sleep(2 * time.Second)
			_, _ = io.WriteString(c, "data: {\"pub\":{\"n\":1}}\n\ndata: {}\n\n")
			hold(c)
		}}
		g := newGroup(t, sse.Config{Dial: target.dial, Sink: rec, DeliveryTimeout: 5 * time.Second,
			Match: func(ev sse.Event) bool { return bytes.Contains(ev.Data, []byte(`"pub"`)) }})
		s := g.Open(t.Context())
		time.Sleep(time.Second) // the connect frame and a ping have arrived
		s.Expect(2)             // the publication to come, and one that never will
		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := s.Close()
		assert.Equal(t, int64(4), st.Events)
		assert.Equal(t, []loadtest.Outcome{loadtest.OK, loadtest.AppError}, rec.outcomes(sse.KindDelivery),
			"the publication is delivered; the frames around it satisfy nothing")
		assert.Equal(t, time.Second, rec.get(sse.KindDelivery)[0].latency)
	})
}
