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
// most one KindDelivery sample:
//
//   - OK when its event arrives, with the time from the expectation to the
//     event's receipt as latency (0 when the event came first);
//   - AppError when Config.DeliveryTimeout passes without it, with the time
//     waited as latency and an Err naming what is missing;
//   - none when the stream stops (its context ends, or Close) while it is
//     still within DeliveryTimeout: the user left before it was due.
//     Stats.Missing still counts it.
//
// Attribution: a sample belongs to the step in which its expectation was
// made, even when its fate is known only after that step's hold — an
// expectation made in the last DeliveryTimeout of a hold is judged during
// the step's drain, and the step waits for it (up to Scenario.Drain). This
// takes a Sink that can begin an observation (a beginner:
// *loadtest.Recorder and *loadtest.User are): each expected event not met
// at once begins a *loadtest.Pending at the call, which its verdict ends
// (OK or AppError) and the stream's stop abandons. Its latency is then the
// core's (time.Now from Begin to End) rather than Config.Now's; the two are
// the same clock unless Config.Now is replaced. An expectation met at once
// by credit is recorded at once, and so are all samples with any other Sink
// or with the deadline disabled (DeliveryTimeout < 0: no step could wait
// for them), which then fall in the window open when their fate is known.
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
// Memory: times are kept on the group's clock (a time.Duration since the
// group's epoch, 8 bytes against a time.Time's 24), so a pending Expect
// call costs 24 bytes, and with a beginner Sink each pending event costs
// that plus its Pending. A stream with nothing pending holds no Pending.
//
// Counters: Expected = Delivered + Missing, and Missing = Overdue + the
// expectations still pending.

// beginner is a Sink that can begin an observation attributed to the
// window open now and record it later: *loadtest.Recorder and
// *loadtest.User.
type beginner interface {
	Begin(kind string) *loadtest.Pending
}

// delivery is a stream's expectations, allocated by its first Expect,
// ExpectID or (with Config.TrackIDs) event with an id. Guarded by Stream.mu.
type delivery struct {
	counts fifo[countWant]                // pending Expect events, oldest first
	credit int64                          // events received while no Expect was pending
	ids    map[string]idWant              // pending ExpectID ids
	more   map[string][]*loadtest.Pending // observations of repeated ExpectID ids beyond the first; nil unless any
	idq    fifo[idDue]                    // pending ids in registration order; every pending id has an entry, stale ones are skipped
	seen   map[string]struct{}            // ids received, with Config.TrackIDs
	timer  *time.Timer                    // judges overdue expectations; nil until the first deadline
	armed  bool                           // timer is set for a pending expectation
}

// countWant is the part of one Expect(n) call not yet satisfied or, with
// an observation begun, one event of it (n == 1).
type countWant struct {
	at time.Duration // on the group's clock
	n  int64
	p  *loadtest.Pending // the event's observation, or nil
}

// idWant is one pending id; n > 1 when ExpectID was repeated for it, the
// same event satisfying every repetition.
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

// verdict is the fate of n expectations, settled outside Stream.mu: the
// observations begun for them (p, then more) end with it, and the others
// are recorded now with latency lat.
type verdict struct {
	n    int64
	lat  time.Duration
	err  error // nil: delivered (OK); else missing (AppError)
	p    *loadtest.Pending
	more []*loadtest.Pending // never holds nil
}

// Expect adds n events this stream must deliver, such as one per tool call
// whose completion the target announces on the stream. Each is one
// KindDelivery sample, attributed to the step in which Expect was called
// when the Sink can begin observations (see Config.Sink): OK when it
// arrives (latency from this call to its receipt; events that arrived
// before the call count, with latency 0), AppError when it has not arrived
// within Config.DeliveryTimeout. n <= 0 adds nothing.
func (s *Stream) Expect(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	now := s.g.now()
	s.c.expected.Add(int64(n))
	s.g.c.expected.Add(int64(n))
	d := s.deliveryLocked()
	met := min(d.credit, int64(n))
	d.credit -= met
	s.deliveredLocked(met)
	if rest := int64(n) - met; rest > 0 {
		if b := s.beginnerLocked(); b != nil {
			for range rest {
				d.counts.push(countWant{at: now, n: 1, p: b.Begin(KindDelivery)})
			}
		} else {
			d.counts.push(countWant{at: now, n: rest})
		}
		s.armLocked(now)
	}
	s.mu.Unlock()
	s.settle(verdict{n: met})
}

// ExpectID registers an event id this stream must deliver, judged as
// Expect's events are. It matches an event received after the call, or
// before it when Config.TrackIDs is set. An event matched by id does not
// count for Expect.
func (s *Stream) ExpectID(id string) {
	s.mu.Lock()
	now := s.g.now()
	s.c.expected.Add(1)
	s.g.c.expected.Add(1)
	d := s.deliveryLocked()
	if _, ok := d.seen[id]; ok {
		s.deliveredLocked(1)
		s.mu.Unlock()
		s.settle(verdict{n: 1})
		return
	}
	var p *loadtest.Pending
	if b := s.beginnerLocked(); b != nil {
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
		s.mu.Unlock()
		return
	}
	if d.ids == nil {
		d.ids = map[string]idWant{}
	}
	d.ids[id] = idWant{at: now, n: 1, p: p}
	d.idq.push(idDue{id: id, at: now})
	s.armLocked(now)
	s.mu.Unlock()
}

// beginnerLocked returns the Sink as a beginner when new expectations are
// to be observed: it can begin them, the stream has not left (nothing
// would end them) and the deadline is on (a step could not wait for them).
func (s *Stream) beginnerLocked() beginner {
	if s.left || s.g.cfg.DeliveryTimeout < 0 {
		return nil
	}
	return s.begin
}

// deliveryLocked returns the stream's delivery state, allocating it with
// every matching event received so far as credit.
func (s *Stream) deliveryLocked() *delivery {
	if s.dl == nil {
		s.dl = &delivery{credit: s.matched}
	}
	return s.dl
}

// arrivedLocked matches an event received at (by Config.Now) with the id
// in effect and returns what it satisfied. The caller has counted the
// event already.
func (s *Stream) arrivedLocked(id []byte, at time.Time) verdict {
	track := s.g.cfg.TrackIDs && len(id) > 0
	d := s.dl
	if d == nil {
		if !track {
			return verdict{} // credit: the matched counter holds it
		}
		d = s.deliveryLocked() // this event is in the credit already
		d.seen = map[string]struct{}{string(id): {}}
		return verdict{}
	}
	if len(id) > 0 {
		if w, ok := d.ids[string(id)]; ok {
			delete(d.ids, string(id))
			v := verdict{n: w.n, lat: max(0, s.g.since(at)-w.at), p: w.p}
			if d.more != nil {
				v.more = d.more[string(id)]
				delete(d.more, string(id))
			}
			s.deliveredLocked(w.n)
			s.disarmIfIdleLocked()
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
	v := verdict{n: 1, lat: max(0, s.g.since(at)-w.at), p: w.p}
	if w.n--; w.n == 0 {
		d.counts.pop()
	}
	s.deliveredLocked(1)
	s.disarmIfIdleLocked()
	return v
}

func (s *Stream) deliveredLocked(n int64) {
	if n > 0 {
		s.c.delivered.Add(n)
		s.g.c.delivered.Add(n)
	}
}

// armLocked sets the timer for the oldest pending expectation's deadline,
// unless it is set already, the stream has left or deadlines are off.
func (s *Stream) armLocked(now time.Duration) {
	d := s.dl
	timeout := s.g.cfg.DeliveryTimeout
	if d.armed || s.left || timeout < 0 {
		return
	}
	at, ok := d.oldest()
	if !ok {
		return
	}
	wait := at + timeout - now
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
func (s *Stream) judgeOverdue() {
	s.mu.Lock()
	now := s.g.now()
	s.dl.armed = false
	var missed []verdict
	if !s.left {
		missed = s.judgeLocked(now, false)
		s.armLocked(now)
	}
	s.mu.Unlock()
	for _, v := range missed {
		s.settle(v)
	}
}

// leave ends judgement when the stream stops (its context ended or Close):
// expectations already overdue are judged, those still within
// DeliveryTimeout stay pending, unjudged, and their observations are
// abandoned.
func (s *Stream) leave() {
	s.mu.Lock()
	if s.left {
		s.mu.Unlock()
		return
	}
	var missed []verdict
	var abandoned []*loadtest.Pending
	if d := s.dl; d != nil {
		if s.g.cfg.DeliveryTimeout >= 0 {
			missed = s.judgeLocked(s.g.now(), false)
			abandoned = d.takePending()
		}
		if d.armed {
			d.timer.Stop()
			d.armed = false
		}
	}
	s.left = true
	s.mu.Unlock()
	for _, p := range abandoned {
		p.Abandon()
	}
	for _, v := range missed {
		s.settle(v)
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
func (s *Stream) judgeLocked(now time.Duration, all bool) []verdict {
	d := s.dl
	if d == nil {
		return nil
	}
	timeout := s.g.cfg.DeliveryTimeout
	due := func(at time.Duration) bool { return all || now >= at+timeout }
	var out []verdict
	for d.counts.len() > 0 && due(d.counts.front().at) {
		w := *d.counts.front()
		d.counts.pop()
		v := verdict{n: w.n, p: w.p}
		// The observed events of one Expect call (or of calls at the same
		// instant) share one verdict, as the call's count does.
		for w.p != nil && d.counts.len() > 0 && d.counts.front().at == w.at && d.counts.front().p != nil {
			v.n++
			v.more = append(v.more, d.counts.front().p)
			d.counts.pop()
		}
		out = append(out, s.missLocked(now, w.at, v, ""))
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
			out = append(out, s.missLocked(now, w.at, v, e.id))
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
func (s *Stream) missLocked(now, at time.Duration, v verdict, id string) verdict {
	s.c.overdue.Add(v.n)
	s.g.c.overdue.Add(v.n)
	what, verb := "an event", "has"
	switch {
	case id != "":
		what = fmt.Sprintf("event id %q", id)
	case v.n > 1:
		what, verb = fmt.Sprintf("%d events", v.n), "have"
	}
	waited := now - at
	delivered := s.c.delivered.Load()
	v.lat = waited
	v.err = fmt.Errorf("sse: %s expected %v ago (at %s) %s not arrived; %s, %d delivered, %d missing",
		what, waited.Round(time.Millisecond), s.g.wall(at).Format("15:04:05.000"), verb, s.state(),
		delivered, s.c.expected.Load()-delivered)
	return v
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

// settle records a verdict: the observations begun for it end with its
// outcome (their latency measured by the core), and its other expectations
// are recorded now through the Sink with the verdict's latency.
func (s *Stream) settle(v verdict) {
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
		s.record(KindDelivery, v.lat, resp)
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
