// Package delivery judges the pushed messages a held stream must deliver:
// the expectations of sse's streams, wsc's connections and grpcc's server
// streams, and their delivery samples. Each stream keeps one Ledger,
// guarded by the stream's own mutex.
//
// Expect(n) registers n expected messages and ExpectID(id) one keyed by
// id, each stamped with Rules.Now at the call. Every expected message ends
// in at most one delivery sample (kind Rules.Kind):
//
//   - OK when its message arrives, with the time from the expectation to
//     the message's receipt as latency (0 when the message came first);
//   - AppError when Rules.Timeout passes without it, with the time waited
//     as latency and an Err naming what is missing;
//   - none when the stream stops (Leave) while it is still within
//     Rules.Timeout: the user left before it was due. Counters.Missing
//     still counts it.
//
// Attribution: a sample belongs to the step in which its expectation was
// made, even when its fate is known only after that step's hold — an
// expectation made in the last Timeout of a hold is judged during the
// step's drain, and the step waits for it (up to Scenario.Drain). This
// takes a Sink that can begin an observation (a Beginner:
// *loadtest.Recorder and *loadtest.User are): each expected message not
// met at once begins a *loadtest.Pending at the call, which its verdict
// ends (OK or AppError) and Leave abandons. Its latency is then the
// core's (time.Now from Begin to End) rather than Rules.Now's; the two are
// the same clock unless Rules.Now is replaced. An expectation met at once
// by credit is recorded at once, and so are all samples with any other
// Sink or with the deadline disabled (Timeout < 0: no step could wait for
// them), which then fall in the window open when their fate is known.
//
// Matching: a message whose id matches a pending ExpectID satisfies it;
// any other message satisfies the oldest pending Expect or, when none is
// pending, is banked as credit that the next Expect consumes at once. An
// expectation judged overdue is final: a message arriving after its
// deadline is credited like any other, because without ids it cannot be
// told from the next call's message (a late message shows in the fan-out
// delay).
//
// Deadlines: a ledger with pending expectations arms one timer for the
// oldest one's deadline; when it fires it judges every overdue expectation
// and re-arms for the next. A ledger with nothing pending has no armed
// timer, and one that never expected anything allocates nothing: until
// the first expectation, every message received is credit (a counter).
//
// Memory: times are kept on the rules' clock (a time.Duration since
// Rules.Epoch, 8 bytes against a time.Time's 24), so a pending Expect call
// costs 24 bytes, and with a Beginner Sink each pending message costs that
// plus its Pending. A ledger with nothing pending holds no Pending.
//
// Counters: Expected = Delivered + Missing, and Missing = Overdue + the
// expectations still pending.
package delivery

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// Beginner is a Sink that can begin an observation attributed to the
// window open now and record it later: *loadtest.Recorder and
// *loadtest.User.
type Beginner interface {
	Begin(kind string) *loadtest.Pending
}

// Counters are a ledger's counts, or a group's summed over its ledgers.
type Counters struct {
	Expected, Delivered, Overdue atomic.Int64
}

// Load returns the counts now: Missing = Expected - Delivered, never
// negative (an expectation is counted expected before delivered, and
// Delivered is read first).
func (c *Counters) Load() (expected, delivered, missing, overdue int64) {
	delivered = c.Delivered.Load()
	expected = c.Expected.Load()
	return expected, delivered, expected - delivered, c.Overdue.Load()
}

// Rules are what the ledgers of one group share.
type Rules struct {
	// Kind names the delivery samples.
	Kind string
	// Timeout is how long an expected message may take; < 0 disables the
	// deadline (nothing is judged until JudgeAllLocked).
	Timeout time.Duration
	// TrackIDs: ExpectID also matches a message that arrived before it.
	TrackIDs bool
	// Now is the clock of expectations and receipts; Epoch its origin.
	Now   func() time.Time
	Epoch time.Time
	// Prefix and Noun word a missing message's error: "sse" and "event"
	// make "sse: an event expected 2s ago … has not arrived".
	Prefix, Noun string
	// Total, when set, sums every ledger's counts.
	Total *Counters
}

func (r *Rules) now() time.Duration { return r.since(r.Now()) }

func (r *Rules) since(t time.Time) time.Duration { return t.Sub(r.Epoch) }

func (r *Rules) wall(at time.Duration) time.Time { return r.Epoch.Add(at) }

// Owner is what a ledger asks of the stream that holds it.
type Owner interface {
	// Record records a sample through the stream's Sink.
	Record(kind string, d time.Duration, r loadtest.Response)
	// State describes the stream's connection for a missing message's
	// error ("stream connected"); it is called with the owner's mutex held.
	State() string
}

// Ledger is one stream's expectations. Its methods named …Locked are
// called with the owner's mutex held; the others take it themselves. Set
// it up with Init before any other call.
type Ledger struct {
	rules   *Rules
	mu      sync.Locker // the owner's mutex: guards everything below
	owner   Owner
	c       *Counters
	begin   Beginner // the Sink, when it can begin observations; else nil
	matched int64    // messages received before the first expectation: credit
	left    bool     // the stream stopped: expectations are no longer judged
	b       *book    // nil until the first expectation
}

// Init sets the ledger up for a stream whose mutex is mu, whose counts
// are c and whose samples go to sink.
func (l *Ledger) Init(rules *Rules, mu sync.Locker, owner Owner, c *Counters, sink loadtest.Sink) {
	l.rules, l.mu, l.owner, l.c = rules, mu, owner, c
	l.begin, _ = sink.(Beginner)
}

// book is a ledger's expectations, allocated by its first Expect,
// ExpectID or (with Rules.TrackIDs) message with an id.
type book struct {
	counts fifo[countWant]                // pending Expect messages, oldest first
	credit int64                          // messages received while no Expect was pending
	ids    map[string]idWant              // pending ExpectID ids
	more   map[string][]*loadtest.Pending // observations of repeated ExpectID ids beyond the first; nil unless any
	idq    fifo[idDue]                    // pending ids in registration order; every pending id has an entry, stale ones are skipped
	seen   map[string]struct{}            // ids received, with Rules.TrackIDs
	timer  *time.Timer                    // judges overdue expectations; nil until the first deadline
	armed  bool                           // timer is set for a pending expectation
}

// countWant is the part of one Expect(n) call not yet satisfied or, with
// an observation begun, one message of it (n == 1).
type countWant struct {
	at time.Duration // on the rules' clock
	n  int64
	p  *loadtest.Pending // the message's observation, or nil
}

// idWant is one pending id; n > 1 when ExpectID was repeated for it, the
// same message satisfying every repetition.
type idWant struct {
	at time.Duration // of the first repetition, on the rules' clock
	n  int64
	p  *loadtest.Pending // the first repetition's observation, or nil; book.more holds the others'
}

// idDue is an id's place in the deadline queue; the entry is stale when
// ids no longer holds the id with the same time.
type idDue struct {
	id string
	at time.Duration
}

// Verdict is the fate of some expectations, settled (Settle) outside the
// owner's mutex: the observations begun for them end with it, and the
// others are recorded then.
type Verdict struct {
	n    int64
	lat  time.Duration
	err  error // nil: delivered (OK); else missing (AppError)
	p    *loadtest.Pending
	more []*loadtest.Pending // never holds nil
}

// Expect adds n messages the stream must deliver; n <= 0 adds nothing.
// See the package comment for how each is judged.
func (l *Ledger) Expect(n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	now := l.rules.now()
	l.c.Expected.Add(int64(n))
	if l.rules.Total != nil {
		l.rules.Total.Expected.Add(int64(n))
	}
	b := l.book()
	met := min(b.credit, int64(n))
	b.credit -= met
	l.delivered(met)
	if rest := int64(n) - met; rest > 0 {
		if bg := l.beginner(); bg != nil {
			for range rest {
				b.counts.push(countWant{at: now, n: 1, p: bg.Begin(l.rules.Kind)})
			}
		} else {
			b.counts.push(countWant{at: now, n: rest})
		}
		l.arm(now)
	}
	l.mu.Unlock()
	l.Settle(Verdict{n: met})
}

// ExpectID registers a message id the stream must deliver, judged as
// Expect's messages are. It matches a message received after the call, or
// before it with Rules.TrackIDs. A message matched by id does not count
// for Expect.
func (l *Ledger) ExpectID(id string) {
	l.mu.Lock()
	now := l.rules.now()
	l.c.Expected.Add(1)
	if l.rules.Total != nil {
		l.rules.Total.Expected.Add(1)
	}
	b := l.book()
	if _, ok := b.seen[id]; ok {
		l.delivered(1)
		l.mu.Unlock()
		l.Settle(Verdict{n: 1})
		return
	}
	var p *loadtest.Pending
	if bg := l.beginner(); bg != nil {
		p = bg.Begin(l.rules.Kind)
	}
	if w, ok := b.ids[id]; ok {
		w.n++
		b.ids[id] = w
		if p != nil {
			if b.more == nil {
				b.more = map[string][]*loadtest.Pending{}
			}
			b.more[id] = append(b.more[id], p)
		}
		l.mu.Unlock()
		return
	}
	if b.ids == nil {
		b.ids = map[string]idWant{}
	}
	b.ids[id] = idWant{at: now, n: 1, p: p}
	b.idq.push(idDue{id: id, at: now})
	l.arm(now)
	l.mu.Unlock()
}

// beginner returns the Sink as a Beginner when new expectations are to
// be observed: it can begin them, the stream has not left (nothing would
// end them) and the deadline is on (a step could not wait for them).
func (l *Ledger) beginner() Beginner {
	if l.left || l.rules.Timeout < 0 {
		return nil
	}
	return l.begin
}

// book returns the ledger's expectations, allocating them with every
// message received so far as credit.
func (l *Ledger) book() *book {
	if l.b == nil {
		l.b = &book{credit: l.matched}
	}
	return l.b
}

// ArrivedLocked matches a message received at (by Rules.Now) with id
// (nil for none) and returns what it satisfied, for Settle once the
// owner's mutex is released.
func (l *Ledger) ArrivedLocked(id []byte, at time.Time) Verdict {
	l.matched++
	track := l.rules.TrackIDs && len(id) > 0
	b := l.b
	if b == nil {
		if !track {
			return Verdict{} // credit: the matched counter holds it
		}
		b = l.book() // this message is in the credit already
		b.seen = map[string]struct{}{string(id): {}}
		return Verdict{}
	}
	if len(id) > 0 {
		if w, ok := b.ids[string(id)]; ok {
			delete(b.ids, string(id))
			v := Verdict{n: w.n, lat: max(0, l.rules.since(at)-w.at), p: w.p}
			if b.more != nil {
				v.more = b.more[string(id)]
				delete(b.more, string(id))
			}
			l.delivered(w.n)
			l.disarmIfIdle()
			return v
		}
		if track {
			if b.seen == nil {
				b.seen = map[string]struct{}{}
			}
			b.seen[string(id)] = struct{}{}
		}
	}
	if b.counts.len() == 0 {
		b.credit++
		return Verdict{}
	}
	w := b.counts.front()
	v := Verdict{n: 1, lat: max(0, l.rules.since(at)-w.at), p: w.p}
	if w.n--; w.n == 0 {
		b.counts.pop()
	}
	l.delivered(1)
	l.disarmIfIdle()
	return v
}

func (l *Ledger) delivered(n int64) {
	if n > 0 {
		l.c.Delivered.Add(n)
		if l.rules.Total != nil {
			l.rules.Total.Delivered.Add(n)
		}
	}
}

// ArmedLocked says a deadline timer is set.
func (l *Ledger) ArmedLocked() bool { return l.b != nil && l.b.armed }

// PendingLocked returns the number of pending Expect entries and ids.
func (l *Ledger) PendingLocked() (counts, ids int) {
	if l.b == nil {
		return 0, 0
	}
	return l.b.counts.len(), l.b.idq.len()
}

// arm sets the timer for the oldest pending expectation's deadline,
// unless it is set already, the stream has left or deadlines are off.
func (l *Ledger) arm(now time.Duration) {
	b := l.b
	timeout := l.rules.Timeout
	if b.armed || l.left || timeout < 0 {
		return
	}
	at, ok := b.oldest()
	if !ok {
		return
	}
	wait := at + timeout - now
	if b.timer == nil {
		b.timer = time.AfterFunc(wait, l.judgeOverdue)
	} else {
		b.timer.Reset(wait)
	}
	b.armed = true
}

// disarmIfIdle stops the timer when nothing is pending any more. A timer
// left set for a satisfied expectation only re-arms for the next.
func (l *Ledger) disarmIfIdle() {
	b := l.b
	if b.counts.len() > 0 || len(b.ids) > 0 {
		return
	}
	b.idq.reset()
	if b.armed {
		b.timer.Stop()
		b.armed = false
	}
}

// oldest returns the time of the oldest pending expectation, dropping
// stale entries of the id queue.
func (b *book) oldest() (time.Duration, bool) {
	for b.idq.len() > 0 {
		e := b.idq.front()
		if w, ok := b.ids[e.id]; ok && w.at == e.at {
			break
		}
		b.idq.pop()
	}
	var at time.Duration
	ok := false
	if b.counts.len() > 0 {
		at, ok = b.counts.front().at, true
	}
	if b.idq.len() > 0 {
		if e := b.idq.front(); !ok || e.at < at {
			at, ok = e.at, true
		}
	}
	return at, ok
}

// judgeOverdue is the timer's function: it judges the expectations whose
// deadline has passed and re-arms for the next.
func (l *Ledger) judgeOverdue() {
	l.mu.Lock()
	now := l.rules.now()
	l.b.armed = false
	var missed []Verdict
	if !l.left {
		missed = l.judge(now, false)
		l.arm(now)
	}
	l.mu.Unlock()
	for _, v := range missed {
		l.Settle(v)
	}
}

// Leave ends judgement when the stream stops (its user left, or Close):
// expectations already overdue are judged, those still within Timeout
// stay pending, unjudged, and their observations are abandoned. Later
// calls do nothing.
func (l *Ledger) Leave() {
	l.mu.Lock()
	if l.left {
		l.mu.Unlock()
		return
	}
	var missed []Verdict
	var abandoned []*loadtest.Pending
	if b := l.b; b != nil {
		if l.rules.Timeout >= 0 {
			missed = l.judge(l.rules.now(), false)
			abandoned = b.takePending()
		}
		if b.armed {
			b.timer.Stop()
			b.armed = false
		}
	}
	l.left = true
	l.mu.Unlock()
	for _, p := range abandoned {
		p.Abandon()
	}
	for _, v := range missed {
		l.Settle(v)
	}
}

// takePending removes the observations of the pending expectations and
// returns them; the expectations stay, counted as missing.
func (b *book) takePending() []*loadtest.Pending {
	var out []*loadtest.Pending
	for i := b.counts.head; i < len(b.counts.buf); i++ {
		if w := &b.counts.buf[i]; w.p != nil {
			out = append(out, w.p)
			w.p = nil
		}
	}
	for id, w := range b.ids {
		if w.p != nil {
			out = append(out, w.p)
			w.p = nil
			b.ids[id] = w
		}
	}
	for _, ps := range b.more {
		out = append(out, ps...)
	}
	b.more = nil
	return out
}

// JudgeAllLocked judges every pending expectation missing now, as Close
// does when the deadline is disabled, and returns the verdicts to Settle.
func (l *Ledger) JudgeAllLocked() []Verdict { return l.judge(l.rules.now(), true) }

// judge removes the pending expectations that are overdue at now (every
// pending one when all is set), counts them and returns their verdicts.
func (l *Ledger) judge(now time.Duration, all bool) []Verdict {
	b := l.b
	if b == nil {
		return nil
	}
	timeout := l.rules.Timeout
	due := func(at time.Duration) bool { return all || now >= at+timeout }
	var out []Verdict
	for b.counts.len() > 0 && due(b.counts.front().at) {
		w := *b.counts.front()
		b.counts.pop()
		v := Verdict{n: w.n, p: w.p}
		// The observed messages of one Expect call (or of calls at the
		// same instant) share one verdict, as the call's count does.
		for w.p != nil && b.counts.len() > 0 && b.counts.front().at == w.at && b.counts.front().p != nil {
			v.n++
			v.more = append(v.more, b.counts.front().p)
			b.counts.pop()
		}
		out = append(out, l.miss(now, w.at, v, ""))
	}
	for b.idq.len() > 0 {
		e := *b.idq.front()
		w, ok := b.ids[e.id]
		if ok && w.at == e.at {
			if !due(e.at) {
				break
			}
			delete(b.ids, e.id)
			v := Verdict{n: w.n, p: w.p}
			if b.more != nil {
				v.more = b.more[e.id]
				delete(b.more, e.id)
			}
			out = append(out, l.miss(now, w.at, v, e.id))
		}
		b.idq.pop()
	}
	if len(b.ids) == 0 {
		b.idq.reset()
	}
	return out
}

// miss counts v's expectations, registered at, as overdue at now and
// returns v with their latency and error.
func (l *Ledger) miss(now, at time.Duration, v Verdict, id string) Verdict {
	l.c.Overdue.Add(v.n)
	if l.rules.Total != nil {
		l.rules.Total.Overdue.Add(v.n)
	}
	noun := l.rules.Noun
	what, verb := article(noun)+" "+noun, "has"
	switch {
	case id != "":
		what = fmt.Sprintf("%s id %q", noun, id)
	case v.n > 1:
		what, verb = fmt.Sprintf("%d %ss", v.n, noun), "have"
	}
	waited := now - at
	_, delivered, missing, _ := l.c.Load()
	v.lat = waited
	v.err = fmt.Errorf("%s: %s expected %v ago (at %s) %s not arrived; %s, %d delivered, %d missing",
		l.rules.Prefix, what, waited.Round(time.Millisecond), l.rules.wall(at).Format("15:04:05.000"), verb,
		l.owner.State(), delivered, missing)
	return v
}

func article(noun string) string {
	if noun != "" && (noun[0] == 'a' || noun[0] == 'e' || noun[0] == 'i' || noun[0] == 'o' || noun[0] == 'u') {
		return "an"
	}
	return "a"
}

// Settle records a verdict: the observations begun for it end with its
// outcome (their latency measured by the core), and its other
// expectations are recorded now through the owner with the verdict's
// latency. Call it without the owner's mutex.
func (l *Ledger) Settle(v Verdict) {
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
		l.owner.Record(l.rules.Kind, v.lat, resp)
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
