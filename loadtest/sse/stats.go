package sse

import (
	"sync/atomic"

	"github.com/headroom-dev/headroom/loadtest/internal/delivery"
)

// Stats are counts of one stream or of a whole group.
type Stats struct {
	// Streams is the number of streams opened.
	Streams int64
	// Connected is the number of streams connected now.
	Connected int64
	// Connects is the number of successful connects (response 200 with an
	// event stream), first connects and reconnects.
	Connects int64
	// ConnectErrors is the number of failed connect attempts.
	ConnectErrors int64
	// Drops is the number of connected streams that ended while the run
	// went on (reset, closed by the target, broken framing).
	Drops int64
	// Reconnects is the number of successful connects after a drop.
	Reconnects int64
	// Events is the number of events dispatched.
	Events int64
	// Comments is the number of comment lines, such as keepalives.
	Comments int64
	// Unhealthy is the number of times a connected stream stayed silent
	// for twice the keepalive interval.
	Unhealthy int64
	// UnhealthyNow is the number of streams silent past that bound now.
	UnhealthyNow int64
	// ProtocolErrors is the number of protocol violations (malformed
	// stream, oversize event, bad response head or framing).
	ProtocolErrors int64
	// FanoutSamples is the number of events with a written time.
	FanoutSamples int64
	// ClockSkew is the number of events whose written time was after their
	// receipt (recorded as zero delay): the clocks disagree.
	ClockSkew int64
	// BadWrittenAt is the number of events whose written time did not
	// parse (each a KindMalformed sample).
	BadWrittenAt int64
	// Expected is the number of events expected (Expect counts plus
	// ExpectID calls). Expected = Delivered + Missing.
	Expected int64
	// Delivered is the number of expected events that arrived, each an OK
	// KindDelivery sample (an event is credited to one expectation only).
	Delivered int64
	// Missing is the number of expected events not delivered, now: those
	// Overdue plus those still pending, including any still within
	// DeliveryTimeout when the stream stopped (never judged).
	Missing int64
	// Overdue is the number of expected events judged missing, each an
	// AppError KindDelivery sample: not delivered within
	// Config.DeliveryTimeout or, with the deadline disabled, by Close.
	Overdue int64
	// Clock describes the clocks of the fan-out samples.
	Clock string
}

// counters are the atomic form of Stats, one per stream and one per group.
type counters struct {
	streams, connected, connects, connectErrors, drops, reconnects atomic.Int64
	events, comments, unhealthy, unhealthyNow, protocolErrors      atomic.Int64
	fanout, skew, badWritten                                       atomic.Int64
	dl                                                             delivery.Counters
}

func (c *counters) snapshot() Stats {
	expected, delivered, missing, overdue := c.dl.Load()
	return Stats{
		Streams:        c.streams.Load(),
		Connected:      c.connected.Load(),
		Connects:       c.connects.Load(),
		ConnectErrors:  c.connectErrors.Load(),
		Drops:          c.drops.Load(),
		Reconnects:     c.reconnects.Load(),
		Events:         c.events.Load(),
		Comments:       c.comments.Load(),
		Unhealthy:      c.unhealthy.Load(),
		UnhealthyNow:   c.unhealthyNow.Load(),
		ProtocolErrors: c.protocolErrors.Load(),
		FanoutSamples:  c.fanout.Load(),
		ClockSkew:      c.skew.Load(),
		BadWrittenAt:   c.badWritten.Load(),
		Expected:       expected,
		Delivered:      delivered,
		Missing:        missing,
		Overdue:        overdue,
	}
}
