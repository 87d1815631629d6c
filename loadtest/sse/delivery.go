package sse

import (
	"fmt"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// Delivery: expected events and their KindDelivery samples.
//
// Expect(n) registers n expected events and ExpectID(id) one keyed by id,
// each stamped with Config.Now at the call. Every expected event ends in at
// most one KindDelivery sample, recorded through the Sink as soon as its
// fate is known, so that it falls in the measurement window open then:
//
//   - OK when its event arrives, with the time from the expectation to the
//     event's receipt as latency (0 when the event came first);
//   - AppError when Config.DeliveryTimeout passes without it, with the time
//     waited as latency and an Err naming what is missing;
//   - none when the stream stops (its context ends, or Close) while it is
//     still within DeliveryTimeout: the user left before it was due.
//     Stats.Missing still counts it.
//
// Matching: an event whose id matches a pending ExpectID satisfies it;
// any other event satisfies the oldest pending Expect or, when none is
// pending, is banked as credit that the next Expect consumes at once. An
// expectation judged overdue is final: an event arriving after its deadline
// is credited like any other, because without ids it cannot be told from
// the next call's event (a late event shows in the fan-out delay).
//
// Deadlines: a stream with pending expectations arms one timer for the
// oldest one's deadline; when it fires it judges every overdue expectation
// and re-arms for the next. A stream with nothing pending has no armed
// timer, and a stream that never expected anything allocates nothing: until
// the first expectation, every event received is credit (the event
// counter, kept under Stream.mu).
//
// Counters: Expected = Delivered + Missing, and Missing = Overdue + the
// expectations still pending.

// delivery is a stream's expectations, allocated by its first Expect,
// ExpectID or (with Config.TrackIDs) event with an id. Guarded by Stream.mu.
type delivery struct {
	counts fifo[countWant]     // pending Expect calls, oldest first
	credit int64               // events received while no Expect was pending
	ids    map[string]idWant   // pending ExpectID ids
	idq    fifo[idDue]         // pending ids in registration order; every pending id has an entry, stale ones are skipped
	seen   map[string]struct{} // ids received, with Config.TrackIDs
	timer  *time.Timer         // judges overdue expectations; nil until the first deadline
	armed  bool                // timer is set for a pending expectation
}

// countWant is the part of one Expect(n) call not yet satisfied.
type countWant struct {
	at time.Time
	n  int64
}

// idWant is one pending id; n > 1 when ExpectID was repeated for it, the
// same event satisfying every repetition.
type idWant struct {
	at time.Time
	n  int64
}

// idDue is an id's place in the deadline queue; the entry is stale when
// ids no longer holds the id with the same time.
type idDue struct {
	id string
	at time.Time
}

// miss is one judged expectation: n AppError samples with this latency and
// error.
type miss struct {
	lat time.Duration
	n   int64
	err error
}

// Expect adds n events this stream must deliver, such as one per tool call
// whose completion the target announces on the stream. Each is one
// KindDelivery sample: OK when it arrives (latency from this call to its
// receipt; events that arrived before the call count, with latency 0),
// AppError when it has not arrived within Config.DeliveryTimeout. n <= 0
// adds nothing.
func (s *Stream) Expect(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	now := s.g.cfg.Now()
	s.c.expected.Add(int64(n))
	s.g.c.expected.Add(int64(n))
	d := s.deliveryLocked()
	met := min(d.credit, int64(n))
	d.credit -= met
	s.deliveredLocked(met)
	if rest := int64(n) - met; rest > 0 {
		d.counts.push(countWant{at: now, n: rest})
		s.armLocked(now)
	}
	s.mu.Unlock()
	s.recordDelivered(0, met)
}

// ExpectID registers an event id this stream must deliver, judged as
// Expect's events are. It matches an event received after the call, or
// before it when Config.TrackIDs is set. An event matched by id does not
// count for Expect.
func (s *Stream) ExpectID(id string) {
	s.mu.Lock()
	now := s.g.cfg.Now()
	s.c.expected.Add(1)
	s.g.c.expected.Add(1)
	d := s.deliveryLocked()
	if _, ok := d.seen[id]; ok {
		s.deliveredLocked(1)
		s.mu.Unlock()
		s.recordDelivered(0, 1)
		return
	}
	if w, ok := d.ids[id]; ok {
		w.n++
		d.ids[id] = w
		s.mu.Unlock()
		return
	}
	if d.ids == nil {
		d.ids = map[string]idWant{}
	}
	d.ids[id] = idWant{at: now, n: 1}
	d.idq.push(idDue{id: id, at: now})
	s.armLocked(now)
	s.mu.Unlock()
}

// deliveryLocked returns the stream's delivery state, allocating it with
// every event received so far as credit.
func (s *Stream) deliveryLocked() *delivery {
	if s.dl == nil {
		s.dl = &delivery{credit: s.c.events.Load()}
	}
	return s.dl
}

// arrivedLocked matches an event received at with the id in effect. It
// returns the delivery latency and how many expectations it satisfied.
// The caller has counted the event already.
func (s *Stream) arrivedLocked(id []byte, at time.Time) (time.Duration, int64) {
	track := s.g.cfg.TrackIDs && len(id) > 0
	d := s.dl
	if d == nil {
		if !track {
			return 0, 0 // credit: the event counter holds it
		}
		d = s.deliveryLocked() // this event is in the credit already
		d.seen = map[string]struct{}{string(id): {}}
		return 0, 0
	}
	if len(id) > 0 {
		if w, ok := d.ids[string(id)]; ok {
			delete(d.ids, string(id))
			s.deliveredLocked(w.n)
			s.disarmIfIdleLocked()
			return max(0, at.Sub(w.at)), w.n
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
		return 0, 0
	}
	w := d.counts.front()
	lat := max(0, at.Sub(w.at))
	if w.n--; w.n == 0 {
		d.counts.pop()
	}
	s.deliveredLocked(1)
	s.disarmIfIdleLocked()
	return lat, 1
}

func (s *Stream) deliveredLocked(n int64) {
	if n > 0 {
		s.c.delivered.Add(n)
		s.g.c.delivered.Add(n)
	}
}

// armLocked sets the timer for the oldest pending expectation's deadline,
// unless it is set already, the stream has left or deadlines are off.
func (s *Stream) armLocked(now time.Time) {
	d := s.dl
	timeout := s.g.cfg.DeliveryTimeout
	if d.armed || s.left || timeout < 0 {
		return
	}
	at, ok := d.oldest()
	if !ok {
		return
	}
	wait := at.Add(timeout).Sub(now)
	if d.timer == nil {
		d.timer = time.AfterFunc(wait, s.judgeOverdue)
	} else {
		d.timer.Reset(wait)
	}
	d.armed = true
}

// disarmIfIdleLocked stops the timer when nothing is pending any more. A
// timer left set for a satisfied expectation only re-arms for the next.
func (s *Stream) disarmIfIdleLocked() {
	d := s.dl
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
func (d *delivery) oldest() (time.Time, bool) {
	for d.idq.len() > 0 {
		e := d.idq.front()
		if w, ok := d.ids[e.id]; ok && w.at.Equal(e.at) {
			break
		}
		d.idq.pop()
	}
	var at time.Time
	ok := false
	if d.counts.len() > 0 {
		at, ok = d.counts.front().at, true
	}
	if d.idq.len() > 0 {
		if e := d.idq.front(); !ok || e.at.Before(at) {
			at, ok = e.at, true
		}
	}
	return at, ok
}

// judgeOverdue is the timer's function: it judges the expectations whose
// deadline has passed and re-arms for the next.
func (s *Stream) judgeOverdue() {
	s.mu.Lock()
	now := s.g.cfg.Now()
	s.dl.armed = false
	var missed []miss
	if !s.left {
		missed = s.judgeLocked(now, false)
		s.armLocked(now)
	}
	s.mu.Unlock()
	s.recordMissed(missed)
}

// leave ends judgement when the stream stops (its context ended or Close):
// expectations already overdue are judged, those still within
// DeliveryTimeout stay pending, unjudged.
func (s *Stream) leave() {
	s.mu.Lock()
	if s.left {
		s.mu.Unlock()
		return
	}
	var missed []miss
	if d := s.dl; d != nil {
		if s.g.cfg.DeliveryTimeout >= 0 {
			missed = s.judgeLocked(s.g.cfg.Now(), false)
		}
		if d.armed {
			d.timer.Stop()
			d.armed = false
		}
	}
	s.left = true
	s.mu.Unlock()
	s.recordMissed(missed)
}

// judgeLocked removes the pending expectations that are overdue at now
// (every pending one when all is set), counts them and returns their
// samples.
func (s *Stream) judgeLocked(now time.Time, all bool) []miss {
	d := s.dl
	if d == nil {
		return nil
	}
	timeout := s.g.cfg.DeliveryTimeout
	due := func(at time.Time) bool { return all || !now.Before(at.Add(timeout)) }
	var out []miss
	for d.counts.len() > 0 && due(d.counts.front().at) {
		w := *d.counts.front()
		d.counts.pop()
		out = append(out, s.missLocked(now, w.at, w.n, ""))
	}
	for d.idq.len() > 0 {
		e := *d.idq.front()
		w, ok := d.ids[e.id]
		if ok && w.at.Equal(e.at) {
			if !due(e.at) {
				break
			}
			delete(d.ids, e.id)
			out = append(out, s.missLocked(now, w.at, w.n, e.id))
		}
		d.idq.pop()
	}
	if len(d.ids) == 0 {
		d.idq.reset()
	}
	return out
}

// missLocked counts n expectations registered at as overdue and describes
// them.
func (s *Stream) missLocked(now, at time.Time, n int64, id string) miss {
	s.c.overdue.Add(n)
	s.g.c.overdue.Add(n)
	what, verb := "an event", "has"
	switch {
	case id != "":
		what = fmt.Sprintf("event id %q", id)
	case n > 1:
		what, verb = fmt.Sprintf("%d events", n), "have"
	}
	waited := now.Sub(at)
	delivered := s.c.delivered.Load()
	err := fmt.Errorf("sse: %s expected %v ago (at %s) %s not arrived; %s, %d delivered, %d missing",
		what, waited.Round(time.Millisecond), at.Format("15:04:05.000"), verb, s.state(),
		delivered, s.c.expected.Load()-delivered)
	return miss{lat: waited, n: n, err: err}
}

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

func (s *Stream) recordDelivered(lat time.Duration, n int64) {
	for range n {
		s.record(KindDelivery, lat, loadtest.Response{Outcome: loadtest.OK})
	}
}

func (s *Stream) recordMissed(ms []miss) {
	for _, m := range ms {
		for range m.n {
			s.record(KindDelivery, m.lat, loadtest.Response{Outcome: loadtest.AppError, Err: m.err})
		}
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
