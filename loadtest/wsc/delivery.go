package wsc

import (
	"fmt"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// Delivery: a connection's expected messages and their KindDelivery
// samples are judged by its ledger (loadtest/internal/delivery, shared
// with sse and grpcc). Only pushed messages count (never a call's reply),
// and only those Config.Match accepts: one whose id (Config.ID) matches a
// pending ExpectID satisfies it, any other the oldest pending Expect or,
// when none is pending, is credit for the next; an expectation not met
// within Config.DeliveryTimeout is an AppError sample; one still within it
// when the connection stops is never judged. A connection that never
// expects anything allocates nothing for it.

// Expect adds n messages the target must push on this connection, such as
// one per call whose completion it announces to the user. Each is one
// KindDelivery sample, attributed to the step in which Expect was called
// when the Sink can begin observations (see Config.Sink): OK when it
// arrives (latency from this call to its receipt; messages that arrived
// before the call count, with latency 0), AppError when it has not arrived
// within Config.DeliveryTimeout. n <= 0 adds nothing.
func (c *Conn) Expect(n int) { c.dl.Expect(n) }

// ExpectID registers a message id (Config.ID) the target must push on this
// connection, judged as Expect's messages are. It matches a message
// received after the call, or before it when Config.TrackIDs is set. A
// message matched by id does not count for Expect.
func (c *Conn) ExpectID(id string) { c.dl.ExpectID(id) }

// ledgerOwner is the Conn as its ledger's delivery.Owner.
type ledgerOwner Conn

func (o *ledgerOwner) Record(kind string, d time.Duration, r loadtest.Response) {
	(*Conn)(o).record(kind, d, r)
}

func (o *ledgerOwner) State() string { return (*Conn)(o).state() }

// state describes the connection for a delivery error.
func (c *Conn) state() string {
	select {
	case <-c.done:
		return fmt.Sprintf("connection ended (%d connects, %d drops, %d failed connects)", c.c.connects.Load(), c.c.dropped.Load(), c.c.connectErrors.Load())
	default:
	}
	switch {
	case c.c.connected.Load() > 0:
		return "connected"
	case c.c.connects.Load() == 0:
		return fmt.Sprintf("never connected (%d failed connects)", c.c.connectErrors.Load())
	default:
		return fmt.Sprintf("disconnected (%d drops, %d failed connects)", c.c.dropped.Load(), c.c.connectErrors.Load())
	}
}
