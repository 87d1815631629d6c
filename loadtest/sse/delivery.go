package sse

import (
	"fmt"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// Delivery: a stream's expected events and their KindDelivery samples are
// judged by its ledger (loadtest/internal/delivery, shared with wsc and
// grpcc): an event matched by id satisfies a pending ExpectID, any other
// the oldest pending Expect or, when none is pending, is credit for the
// next; an expectation not met within Config.DeliveryTimeout is an
// AppError sample; one still within it when the stream stops is never
// judged. A stream that never expects anything allocates nothing for it.

// Expect adds n events this stream must deliver, such as one per tool call
// whose completion the target announces on the stream. Each is one
// KindDelivery sample, attributed to the step in which Expect was called
// when the Sink can begin observations (see Config.Sink): OK when it
// arrives (latency from this call to its receipt; events that arrived
// before the call count, with latency 0), AppError when it has not arrived
// within Config.DeliveryTimeout. n <= 0 adds nothing.
func (s *Stream) Expect(n int) { s.dl.Expect(n) }

// ExpectID registers an event id this stream must deliver, judged as
// Expect's events are. It matches an event received after the call, or
// before it when Config.TrackIDs is set. An event matched by id does not
// count for Expect.
func (s *Stream) ExpectID(id string) { s.dl.ExpectID(id) }

// ledgerOwner is the Stream as its ledger's delivery.Owner.
type ledgerOwner Stream

func (o *ledgerOwner) Record(kind string, d time.Duration, r loadtest.Response) {
	(*Stream)(o).record(kind, d, r)
}

func (o *ledgerOwner) State() string { return (*Stream)(o).state() }

// state describes the stream's connection for a delivery error.
func (s *Stream) state() string {
	select {
	case <-s.done:
		return fmt.Sprintf("stream ended (%d connects, %d drops, %d failed connects)", s.c.connects.Load(), s.c.drops.Load(), s.c.connectErrors.Load())
	default:
	}
	switch {
	case s.c.connected.Load() > 0:
		return "stream connected"
	case s.c.connects.Load() == 0:
		return fmt.Sprintf("stream never connected (%d failed connects)", s.c.connectErrors.Load())
	default:
		return fmt.Sprintf("stream disconnected (%d drops, %d failed connects)", s.c.drops.Load(), s.c.connectErrors.Load())
	}
}
