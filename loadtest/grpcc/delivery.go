package grpcc

import (
	"fmt"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/internal/delivery"
)

const (
	// KindDelivery is one sample per expected message (Delivery.Expect,
	// ExpectID), as sse's and wsc's: OK when the message arrives on the
	// held stream, with the time from the expectation to its receipt (0
	// when it came first); AppError when it has not arrived within
	// DeliveryConfig.Timeout, with the time waited and an Err naming what
	// is missing. Through a Sink that can begin observations (a
	// *loadtest.Recorder or *loadtest.User) the sample belongs to the step
	// in which the expectation was made, and the step waits for it.
	KindDelivery = "grpc_delivery"
	// DefaultDeliveryTimeout is how long an expected message may take to
	// arrive before it is judged missing: well above a healthy target's
	// fan-out delay, well inside a scenario's default Drain (30 s).
	DefaultDeliveryTimeout = 10 * time.Second
)

// DeliveryConfig describes the Deliveries of a run. The zero value takes
// every default.
type DeliveryConfig struct {
	// Kind names the delivery samples; empty means KindDelivery.
	Kind string
	// Timeout is how long an expected message may take to arrive; past it
	// the message is an AppError sample while the stream goes on. Zero
	// means DefaultDeliveryTimeout; a negative value disables the
	// deadline, and Delivery.Close judges whatever is still missing.
	Timeout time.Duration
	// TrackIDs lets ExpectID match a message that arrived before the
	// call (Fanout.ID gives messages their ids). It costs memory per
	// message with an id.
	TrackIDs bool
	// Now is the clock of expectations; nil means time.Now. Fanout.Now
	// must be the same clock.
	Now func() time.Time
}

// Deliveries judge the messages held server streams must deliver: one
// Delivery per stream (For), their counts summed here. A publisher's call
// whose message every subscriber should receive calls Expect on each
// subscriber's Delivery; the subscriber's Fanout.Receive, given that
// Delivery, meets the expectation when the message arrives.
type Deliveries struct {
	rules delivery.Rules
	total delivery.Counters
}

// NewDeliveries returns Deliveries for cfg.
func NewDeliveries(cfg DeliveryConfig) *Deliveries {
	if cfg.Kind == "" {
		cfg.Kind = KindDelivery
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultDeliveryTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	d := &Deliveries{}
	d.rules = delivery.Rules{Kind: cfg.Kind, Timeout: cfg.Timeout, TrackIDs: cfg.TrackIDs,
		Now: cfg.Now, Epoch: cfg.Now(), Prefix: "grpcc", Noun: "message", Total: &d.total}
	return d
}

// For returns the Delivery of one held stream, whose samples go to sink
// (the modeled user's, so that each belongs to the step it was expected
// in). Give it to that stream's Fanout; Close it when the user leaves.
func (g *Deliveries) For(sink loadtest.Sink) *Delivery {
	d := &Delivery{sink: sink, judgeAtClose: g.rules.Timeout < 0}
	d.l.Init(&g.rules, &d.mu, (*deliveryOwner)(d), &d.c, sink)
	return d
}

// Stats returns the counts summed over every Delivery.
func (g *Deliveries) Stats() DeliveryStats { return stats(&g.total) }

// DeliveryStats count expected messages: Expected = Delivered + Missing,
// and Missing = Overdue + those still pending.
type DeliveryStats struct {
	Expected, Delivered, Missing, Overdue int64
}

func stats(c *delivery.Counters) DeliveryStats {
	e, d, m, o := c.Load()
	return DeliveryStats{Expected: e, Delivered: d, Missing: m, Overdue: o}
}

// Delivery is one held stream's expected messages. Its methods are safe
// for concurrent use.
type Delivery struct {
	mu   sync.Mutex
	l    delivery.Ledger
	c    delivery.Counters
	sink loadtest.Sink
	// judgeAtClose: the deadline is disabled, Close judges what is missing.
	judgeAtClose bool

	// Guarded by mu: how the stream stands, for a missing message's error.
	receiving bool
	streams   int64
	lastEnd   error
}

// Expect adds n messages the held stream must deliver, such as one per
// publish the user's subscription should see. Each is one KindDelivery
// sample; n <= 0 adds nothing.
func (d *Delivery) Expect(n int) { d.l.Expect(n) }

// ExpectID registers a message id (Fanout.ID) the stream must deliver,
// judged as Expect's messages are. A message matched by id does not count
// for Expect.
func (d *Delivery) ExpectID(id string) { d.l.ExpectID(id) }

// Close ends judgement, as the user leaves: expectations already overdue
// are judged, those still within the timeout are not (Missing counts
// them), and with the deadline disabled every one still missing is judged.
func (d *Delivery) Close() DeliveryStats {
	d.l.Leave()
	if d.judgeAtClose {
		d.mu.Lock()
		vs := d.l.JudgeAllLocked()
		d.mu.Unlock()
		for _, v := range vs {
			d.l.Settle(v)
		}
	}
	return d.Stats()
}

// Stats returns the stream's counts now.
func (d *Delivery) Stats() DeliveryStats { return stats(&d.c) }

func (d *Delivery) opened() {
	d.mu.Lock()
	d.receiving = true
	d.streams++
	d.mu.Unlock()
}

func (d *Delivery) ended(err error) {
	d.mu.Lock()
	d.receiving = false
	d.lastEnd = err
	d.mu.Unlock()
}

func (d *Delivery) arrived(id []byte, at time.Time) {
	d.mu.Lock()
	v := d.l.ArrivedLocked(id, at)
	d.mu.Unlock()
	d.l.Settle(v)
}

// deliveryOwner is the Delivery as its ledger's delivery.Owner.
type deliveryOwner Delivery

func (o *deliveryOwner) Record(kind string, dur time.Duration, r loadtest.Response) {
	if o.sink != nil {
		o.sink.Record(kind, dur, r)
	}
}

func (o *deliveryOwner) State() string {
	switch {
	case o.receiving:
		return fmt.Sprintf("stream receiving (%d opened)", o.streams)
	case o.streams == 0:
		return "no stream received yet"
	case o.lastEnd == nil:
		return fmt.Sprintf("stream ended normally (%d opened)", o.streams)
	default:
		return fmt.Sprintf("stream ended: %v (%d opened)", o.lastEnd, o.streams)
	}
}
