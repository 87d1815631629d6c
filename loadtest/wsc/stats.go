package wsc

import (
	"sync/atomic"

	"github.com/headroom-dev/headroom/loadtest/internal/delivery"
)

// Stats are counts of one connection or of a whole group.
type Stats struct {
	// Opened is the number of connections opened (Group.Open, OpenFor).
	Opened int64
	// Connected is the number of connections connected now.
	Connected int64
	// Connects is the number of completed handshakes, first connects and
	// reconnects.
	Connects int64
	// ConnectErrors is the number of failed connect attempts.
	ConnectErrors int64
	// Dropped is the number of connected connections that ended while
	// their user held them: closed by the target (whatever the code) or
	// lost.
	Dropped int64
	// Reconnects is the number of completed handshakes after a
	// connection had been connected before (Config.Reconnect).
	Reconnects int64
	// Messages is the number of data messages received, replies and
	// pushed messages alike.
	Messages int64
	// Calls is the number of calls sent (Conn.Call).
	Calls int64
	// Replies is the number of messages that answered a pending call.
	Replies int64
	// FanoutSamples is the number of pushed messages with a written time.
	FanoutSamples int64
	// ClockSkew is the number of pushed messages whose written time was
	// after their receipt (recorded as zero delay): the clocks disagree.
	ClockSkew int64
	// BadWrittenAt is the number of pushed messages whose written time did
	// not parse (each a KindMalformed sample).
	BadWrittenAt int64
	// Expected is the number of messages expected (Expect counts plus
	// ExpectID calls). Expected = Delivered + Missing.
	Expected int64
	// Delivered is the number of expected messages that arrived, each an
	// OK KindDelivery sample.
	Delivered int64
	// Missing is the number of expected messages not delivered, now: those
	// Overdue plus those still pending, including any still within
	// DeliveryTimeout when the connection stopped (never judged).
	Missing int64
	// Overdue is the number of expected messages judged missing, each an
	// AppError KindDelivery sample.
	Overdue int64
	// Clock describes the clocks of the fan-out samples.
	Clock string
}

// counters are the atomic form of Stats, one per connection and one per
// group.
type counters struct {
	opened, connected, connects, connectErrors, dropped, reconnects atomic.Int64
	messages, calls, replies, fanout, skew, badWritten              atomic.Int64
	dl                                                              delivery.Counters
}

func (c *counters) snapshot() Stats {
	expected, delivered, missing, overdue := c.dl.Load()
	return Stats{
		Opened:        c.opened.Load(),
		Connected:     c.connected.Load(),
		Connects:      c.connects.Load(),
		ConnectErrors: c.connectErrors.Load(),
		Dropped:       c.dropped.Load(),
		Reconnects:    c.reconnects.Load(),
		Messages:      c.messages.Load(),
		Calls:         c.calls.Load(),
		Replies:       c.replies.Load(),
		FanoutSamples: c.fanout.Load(),
		ClockSkew:     c.skew.Load(),
		BadWrittenAt:  c.badWritten.Load(),
		Expected:      expected,
		Delivered:     delivered,
		Missing:       missing,
		Overdue:       overdue,
	}
}
