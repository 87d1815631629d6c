package wsc

import (
	"fmt"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// Delivery: expected messages and their KindDelivery samples.
//
// Expect(n) registers n expected messages and ExpectID(id) one keyed by
// id, each stamped with Config.Now at the call. Every expected message ends
// in at most one KindDelivery sample:
//
//   - OK when its message arrives, with the time from the expectation to the
//     message's receipt as latency (0 when the message came first);
//   - AppError when Config.DeliveryTimeout passes without it, with the time
//     waited as latency and an Err naming what is missing;
//   - none when the connection stops (its context ends, or Close) while it
//     is still within DeliveryTimeout: the user left before it was due.
//     Stats.Missing still counts it.
//
// Attribution: a sample belongs to the step in which its expectation was
// made, even when its fate is known only after that step's hold — an
// expectation made in the last DeliveryTimeout of a hold is judged during
// the step's drain, and the step waits for it (up to Scenario.Drain). This
// takes a Sink that can begin an observation (a beginner:
// *loadtest.Recorder and *loadtest.User are): each expected message not met
// at once begins a *loadtest.Pending at the call, which its verdict ends
// (OK or AppError) and the connection's stop abandons. Its latency is then
// the core's (time.Now from Begin to End) rather than Config.Now's; the two
// are
// the same clock unless Config.Now is replaced. An expectation met at once
// by credit is recorded at once, and so are all samples with any other Sink
// or with the deadline disabled (DeliveryTimeout < 0: no step could wait
// for them), which then fall in the window open when their fate is known.
//
// Matching: only pushed messages count (never a call's reply), and only
// those Config.Match accepts. A message whose id (Config.ID) matches a
// pending ExpectID satisfies it; any other message satisfies the oldest
// pending Expect or, when none is pending, is banked as credit that the
// next Expect consumes at once. An expectation judged overdue is final: a
// message arriving after its deadline is credited like any other, because
// without ids it cannot be told from the next call's message (a late
// message shows in the fan-out delay).
//
// Deadlines: a connection with pending expectations arms one timer for
// the oldest one's deadline; when it fires it judges every overdue
// expectation and re-arms for the next. A connection with nothing pending
// has no armed timer, and a connection that never expected anything
// allocates nothing for delivery: until the first expectation, every
// matching message received is credit (Conn.matched, kept under Conn.mu).
//
// Memory: times are kept on the group's clock (a time.Duration since the
// group's epoch, 8 bytes against a time.Time's 24), so a pending Expect
// call costs 24 bytes, and with a beginner Sink each pending message costs
// that plus its Pending. A connection with nothing pending holds no
// Pending.
//
// Counters: Expected = Delivered + Missing, and Missing = Overdue + the
// expectations still pending.

// beginner is a Sink that can begin an observation attributed to the
// window open now and record it later: *loadtest.Recorder and
// *loadtest.User.
type beginner interface {
	Begin(kind string) *loadtest.Pending
}

// delivery is a connection's expectations, allocated by its first Expect,
// ExpectID or (with Config.TrackIDs) message with an id. Guarded by Conn.mu.
type delivery struct {
	counts fifo[countWant]                // pending Expect messages, oldest first
	credit int64                          // messages received while no Expect was pending
	ids    map[string]idWant              // pending ExpectID ids
	more   map[string][]*loadtest.Pending // observations of repeated ExpectID ids beyond the first; nil unless any
	idq    fifo[idDue]                    // pending ids in registration order; every pending id has an entry, stale ones are skipped
	seen   map[string]struct{}            // ids received, with Config.TrackIDs
	timer  *time.Timer                    // judges overdue expectations; nil until the first deadline
	armed  bool                           // timer is set for a pending expectation
}

// countWant is the part of one Expect(n) call not yet satisfied or, with
// an observation begun, one message of it (n == 1).
type countWant struct {
	at time.Duration // on the group's clock
	n  int64
	p  *loadtest.Pending // the message's observation, or nil
}

// idWant is one pending id; n > 1 when ExpectID was repeated for it, the
// same message satisfying every repetition.
type idWant struct {
	at time.Duration // of the first repetition, on the group's clock
	n  int64
	p  *loadtest.Pending // the first repetition's observation, or nil; delivery.more holds the others'
}

// idDue is an id's place in the deadline queue; the entry is stale when
// ids no longer holds the id with the same time.
type idDue struct {
	id string
	at time.Duration
}

// verdict is the fate of n expectations, settled outside Conn.mu: the
// observations begun for them (p, then more) end with it, and the others
// are recorded now with latency lat.
type verdict struct {
	n    int64
	lat  time.Duration
	err  error // nil: delivered (OK); else missing (AppError)
	p    *loadtest.Pending
	more []*loadtest.Pending // never holds nil
}

// Expect adds n messages the target must push on this connection, such as
// one per call whose completion it announces to the user. Each is one
// KindDelivery sample, attributed to the step in which Expect was called
// when the Sink can begin observations (see Config.Sink): OK when it
// arrives (latency from this call to its receipt; messages that arrived
// before the call count, with latency 0), AppError when it has not arrived
// within Config.DeliveryTimeout. n <= 0 adds nothing.
func (c *Conn) Expect(n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	now := c.g.now()
	c.c.expected.Add(int64(n))
	c.g.c.expected.Add(int64(n))
	d := c.deliveryLocked()
	met := min(d.credit, int64(n))
	d.credit -= met
	c.deliveredLocked(met)
	if rest := int64(n) - met; rest > 0 {
		if b := c.beginnerLocked(); b != nil {
			for range rest {
				d.counts.push(countWant{at: now, n: 1, p: b.Begin(KindDelivery)})
			}
		} else {
			d.counts.push(countWant{at: now, n: rest})
		}
		c.armLocked(now)
	}
	c.mu.Unlock()
	c.settle(verdict{n: met})
}

// ExpectID registers a message id (Config.ID) the target must push on this
// connection, judged as Expect's messages are. It matches a message
// received after the call, or before it when Config.TrackIDs is set. A
// message matched by id does not count for Expect.
func (c *Conn) ExpectID(id string) {
	c.mu.Lock()
	now := c.g.now()
	c.c.expected.Add(1)
	c.g.c.expected.Add(1)
	d := c.deliveryLocked()
	if _, ok := d.seen[id]; ok {
		c.deliveredLocked(1)
		c.mu.Unlock()
		c.settle(verdict{n: 1})
		return
	}
	var p *loadtest.Pending
	if b := c.beginnerLocked(); b != nil {
		p = b.Begin(KindDelivery)
	}
	if w, ok := d.ids[id]; ok {
		w.n++
		d.ids[id] = w
		if p != nil {
			if d.more == nil {
				d.more = map[string][]*loadtest.Pending{}
			}
			d.more[id] = append(d.more[id], p)
		}
		c.mu.Unlock()
		return
	}
	if d.ids == nil {
		d.ids = map[string]idWant{}
	}
	d.ids[id] = idWant{at: now, n: 1, p: p}
	d.idq.push(idDue{id: id, at: now})
	c.armLocked(now)
	c.mu.Unlock()
}

// beginnerLocked returns the Sink as a beginner when new expectations are
// to be observed: it can begin them, the connection has not left (nothing
// would end them) and the deadline is on (a step could not wait for them).
func (c *Conn) beginnerLocked() beginner {
	if c.left || c.g.cfg.DeliveryTimeout < 0 {
		return nil
	}
	return c.begin
}

// deliveryLocked returns the connection's delivery state, allocating it
// with every matching message received so far as credit.
func (c *Conn) deliveryLocked() *delivery {
	if c.dl == nil {
		c.dl = &delivery{credit: c.matched}
	}
	return c.dl
}

// arrivedLocked matches a message received at (by Config.Now) with the id
// in effect and returns what it satisfied. The caller has counted the
// message already.
func (c *Conn) arrivedLocked(id []byte, at time.Time) verdict {
	track := c.g.cfg.TrackIDs && len(id) > 0
	d := c.dl
	if d == nil {
		if !track {
			return verdict{} // credit: the matched counter holds it
		}
		d = c.deliveryLocked() // this message is in the credit already
		d.seen = map[string]struct{}{string(id): {}}
		return verdict{}
	}
	if len(id) > 0 {
		if w, ok := d.ids[string(id)]; ok {
			delete(d.ids, string(id))
			v := verdict{n: w.n, lat: max(0, c.g.since(at)-w.at), p: w.p}
			if d.more != nil {
				v.more = d.more[string(id)]
				delete(d.more, string(id))
			}
			c.deliveredLocked(w.n)
			c.disarmIfIdleLocked()
			return v
		}
		if track {
			if d.seen == nil {
				d.seen = map[string]struct{}{}
			}
			d.seen[string(id)] = struct{}{}
		}
	}
	if d.counts.len() == 0 {
		d.credit++
		return verdict{}
	}
	w := d.counts.front()
	v := verdict{n: 1, lat: max(0, c.g.since(at)-w.at), p: w.p}
	if w.n--; w.n == 0 {
		d.counts.pop()
	}
	c.deliveredLocked(1)
	c.disarmIfIdleLocked()
	return v
}

func (c *Conn) deliveredLocked(n int64) {
	if n > 0 {
		c.c.delivered.Add(n)
		c.g.c.delivered.Add(n)
	}
}

// armLocked sets the timer for the oldest pending expectation's deadline,
// unless it is set already, the connection has left or deadlines are off.
func (c *Conn) armLocked(now time.Duration) {
	d := c.dl
	timeout := c.g.cfg.DeliveryTimeout
	if d.armed || c.left || timeout < 0 {
		return
	}
	at, ok := d.oldest()
	if !ok {
		return
	}
	wait := at + timeout - now
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, c.judgeOverdue)
	} else {
		d.timer.Reset(wait)
	}
	d.armed = true
}

// disarmIfIdleLocked stops the timer when nothing is pending any more. A
// timer left set for a satisfied expectation only re-arms for the next.
func (c *Conn) disarmIfIdleLocked() {
	d := c.dl
	if d.counts.len() > 0 || len(d.ids) > 0 {
		return
	}
	d.idq.reset()
	if d.armed {
		d.timer.Stop()
		d.armed = false
	}
}

// oldest returns the time of the oldest pending expectation, dropping
// stale entries of the id queue.
func (d *delivery) oldest() (time.Duration, bool) {
	for d.idq.len() > 0 {
		e := d.idq.front()
		if w, ok := d.ids[e.id]; ok && w.at == e.at {
			break
		}
		d.idq.pop()
	}
	var at time.Duration
	ok := false
	if d.counts.len() > 0 {
		at, ok = d.counts.front().at, true
	}
	if d.idq.len() > 0 {
		if e := d.idq.front(); !ok || e.at < at {
			at, ok = e.at, true
		}
	}
	return at, ok
}

// judgeOverdue is the timer's function: it judges the expectations whose
// deadline has passed and re-arms for the next.
func (c *Conn) judgeOverdue() {
	c.mu.Lock()
	now := c.g.now()
	c.dl.armed = false
	var missed []verdict
	if !c.left {
		missed = c.judgeLocked(now, false)
		c.armLocked(now)
	}
	c.mu.Unlock()
	for _, v := range missed {
		c.settle(v)
	}
}

// leave ends judgement when the connection stops (its context ended or Close):
// expectations already overdue are judged, those still within
// DeliveryTimeout stay pending, unjudged, and their observations are
// abandoned.
func (c *Conn) leave() {
	c.mu.Lock()
	if c.left {
		c.mu.Unlock()
		return
	}
	var missed []verdict
	var abandoned []*loadtest.Pending
	if d := c.dl; d != nil {
		if c.g.cfg.DeliveryTimeout >= 0 {
			missed = c.judgeLocked(c.g.now(), false)
			abandoned = d.takePending()
		}
		if d.armed {
			d.timer.Stop()
			d.armed = false
		}
	}
	c.left = true
	c.mu.Unlock()
	for _, p := range abandoned {
		p.Abandon()
	}
	for _, v := range missed {
		c.settle(v)
	}
}

// takePending removes the observations of the pending expectations and
// returns them; the expectations stay, counted as missing.
func (d *delivery) takePending() []*loadtest.Pending {
	var out []*loadtest.Pending
	for i := d.counts.head; i < len(d.counts.buf); i++ {
		if w := &d.counts.buf[i]; w.p != nil {
			out = append(out, w.p)
			w.p = nil
		}
	}
	for id, w := range d.ids {
		if w.p != nil {
			out = append(out, w.p)
			w.p = nil
			d.ids[id] = w
		}
	}
	for _, ps := range d.more {
		out = append(out, ps...)
	}
	d.more = nil
	return out
}

// judgeLocked removes the pending expectations that are overdue at now
// (every pending one when all is set), counts them and returns their
// verdicts.
func (c *Conn) judgeLocked(now time.Duration, all bool) []verdict {
	d := c.dl
	if d == nil {
		return nil
	}
	timeout := c.g.cfg.DeliveryTimeout
	due := func(at time.Duration) bool { return all || now >= at+timeout }
	var out []verdict
	for d.counts.len() > 0 && due(d.counts.front().at) {
		w := *d.counts.front()
		d.counts.pop()
		v := verdict{n: w.n, p: w.p}
		// The observed messages of one Expect call (or of calls at the same
		// instant) share one verdict, as the call's count does.
		for w.p != nil && d.counts.len() > 0 && d.counts.front().at == w.at && d.counts.front().p != nil {
			v.n++
			v.more = append(v.more, d.counts.front().p)
			d.counts.pop()
		}
		out = append(out, c.missLocked(now, w.at, v, ""))
	}
	for d.idq.len() > 0 {
		e := *d.idq.front()
		w, ok := d.ids[e.id]
		if ok && w.at == e.at {
			if !due(e.at) {
				break
			}
			delete(d.ids, e.id)
			v := verdict{n: w.n, p: w.p}
			if d.more != nil {
				v.more = d.more[e.id]
				delete(d.more, e.id)
			}
			out = append(out, c.missLocked(now, w.at, v, e.id))
		}
		d.idq.pop()
	}
	if len(d.ids) == 0 {
		d.idq.reset()
	}
	return out
}

// missLocked counts v's expectations, registered at, as overdue at now and
// returns v with their latency and error.
func (c *Conn) missLocked(now, at time.Duration, v verdict, id string) verdict {
	c.c.overdue.Add(v.n)
	c.g.c.overdue.Add(v.n)
	what, verb := "a message", "has"
	switch {
	case id != "":
		what = fmt.Sprintf("message id %q", id)
	case v.n > 1:
		what, verb = fmt.Sprintf("%d messages", v.n), "have"
	}
	waited := now - at
	delivered := c.c.delivered.Load()
	v.lat = waited
	v.err = fmt.Errorf("wsc: %s expected %v ago (at %s) %s not arrived; %s, %d delivered, %d missing",
		what, waited.Round(time.Millisecond), c.g.wall(at).Format("15:04:05.000"), verb, c.state(),
		delivered, c.c.expected.Load()-delivered)
	return v
}

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

// settle records a verdict: the observations begun for it end with its
// outcome (their latency measured by the core), and its other expectations
// are recorded now through the Sink with the verdict's latency.
func (c *Conn) settle(v verdict) {
	if v.n == 0 {
		return
	}
	resp := loadtest.Response{Outcome: loadtest.OK}
	if v.err != nil {
		resp = loadtest.Response{Outcome: loadtest.AppError, Err: v.err}
	}
	n := v.n
	if v.p != nil {
		v.p.End(resp)
		n--
	}
	for _, p := range v.more {
		p.End(resp)
		n--
	}
	for range n {
		c.record(KindDelivery, v.lat, resp)
	}
}

// fifo is a queue on a slice that reuses its array.
type fifo[T any] struct {
	buf  []T
	head int
}

func (f *fifo[T]) len() int { return len(f.buf) - f.head }

func (f *fifo[T]) front() *T { return &f.buf[f.head] }

func (f *fifo[T]) push(v T) {
	if f.head > 0 && len(f.buf) == cap(f.buf) {
		n := copy(f.buf, f.buf[f.head:])
		clear(f.buf[n:])
		f.buf, f.head = f.buf[:n], 0
	}
	f.buf = append(f.buf, v)
}

func (f *fifo[T]) pop() {
	var zero T
	f.buf[f.head] = zero
	f.head++
	if f.head == len(f.buf) {
		f.buf, f.head = f.buf[:0], 0
	}
}

func (f *fifo[T]) reset() {
	clear(f.buf)
	f.buf, f.head = f.buf[:0], 0
}
