package loadtest

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// The histograms' range, as results keep it (result.NewHistogram).
const (
	histMin = result.HistogramMin
	histMax = result.HistogramMax
	// maxErrSamples is how many distinct error texts a kind keeps per window.
	maxErrSamples = result.ErrorSamples
)

func newHist() *hdrhistogram.Histogram { return result.NewHistogram() }

// newLiveHist returns a histogram for the live timeline (a second's
// percentiles) and the schedule lag: two significant digits, 27 KB where
// three take 184 KB — a run keeps two per kind for its whole length, so
// that the fixed cost of a run, not its users, once made up a third of a
// thousand modeled users' measured memory.
func newLiveHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, 2) }

// newQueueHist returns a histogram for generator-side queue waits: two
// significant digits are enough to tell 1 ms from 1 s.
func newQueueHist() *hdrhistogram.Histogram { return hdrhistogram.New(histMin, histMax, 2) }

// recordHist adds d to h in microseconds, clamped to the histogram's range.
func recordHist(h *hdrhistogram.Histogram, d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < histMin {
		us = histMin
	} else if us > histMax {
		us = histMax
	}
	h.RecordValue(us)
}

// Recorder collects every request's outcome, latency and bytes per kind. It
// is safe for concurrent use and allocates nothing per sample in steady state.
//
// Samples go to two places: the current measurement window, which a step
// opens for its hold only, and a live window that the progress reporter reads
// and resets every few seconds. A request belongs to the window that was open
// when it was scheduled, even if it completes after the window closed, so a
// slow answer at the end of a hold still counts against that step.
type Recorder struct {
	mu    sync.Mutex // serialises kind registration
	names atomic.Pointer[map[string]int]
	list  []string // kind names by index, guarded by mu

	window atomic.Pointer[window] // nil outside a hold
	live   atomic.Pointer[[]*liveStats]
}

// NewRecorder returns a recorder that knows the given kinds up front; others
// are added on first use.
func NewRecorder(kinds ...string) *Recorder {
	r := &Recorder{}
	m := map[string]int{}
	r.names.Store(&m)
	r.live.Store(&[]*liveStats{})
	for _, k := range kinds {
		r.kind(k)
	}
	return r
}

// kind returns the index of the named kind, registering it when new.
func (r *Recorder) kind(name string) int {
	if i, ok := (*r.names.Load())[name]; ok {
		return i
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.names.Load()
	if i, ok := old[name]; ok {
		return i
	}
	m := make(map[string]int, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	i := len(r.list)
	m[name] = i
	r.list = append(r.list, name)
	live := append(append([]*liveStats(nil), *r.live.Load()...), &liveStats{h: newLiveHist()})
	r.live.Store(&live)
	r.names.Store(&m)
	return i
}

// Kinds returns the names of every kind seen so far, in registration order.
func (r *Recorder) Kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.list...)
}

// Record adds one sample of kind with the given latency to the window open
// now. It implements [Sink] for samples measured outside a request, such as
// fan-out delays.
func (r *Recorder) Record(kind string, latency time.Duration, resp Response) {
	k := r.kind(kind)
	r.recordLive(k, latency, resp, false)
	if w := r.window.Load(); w != nil {
		w.stats(k).record(latency, resp, false)
	}
}

// span is one request in flight: the window it belongs to, its kind and its
// intended send time.
type span struct {
	w        *window
	kind     int
	intended time.Time
}

// offer counts the request s as load offered: live, and in its window with
// how late it started (lag) when the generator scheduled it ahead, and in
// its third of the hold as modeled user unit's (-1: a request of no user).
func (r *Recorder) offer(s span, lag bool, unit int) {
	(*r.live.Load())[s.kind].begun.Add(1)
	if s.w != nil {
		s.w.scheduled.Add(1)
		if lag {
			s.w.recordLag(time.Since(s.intended))
		}
		if unit >= 0 {
			s.w.offerUnit(s, unit)
		} else {
			s.w.offerAlone(s)
		}
	}
}

// begin starts a request of kind k intended to be sent at intended.
func (r *Recorder) begin(k int, intended time.Time) span {
	w := r.window.Load()
	if w != nil {
		w.stats(k).inflight.Add(1)
	}
	return span{w: w, kind: k, intended: intended}
}

// end records the request's response; the latency runs from the intended
// send time to now.
func (r *Recorder) end(s span, resp Response, now time.Time) { r.finish(s, resp, now, true) }

// finish records the end of a request (request) or of a pending
// observation.
func (r *Recorder) finish(s span, resp Response, now time.Time, request bool) {
	lat := now.Sub(s.intended)
	r.recordLive(s.kind, lat, resp, request)
	if s.w != nil {
		ks := s.w.stats(s.kind)
		ks.record(lat, resp, request)
		ks.inflight.Add(-1)
		if request && resp.Outcome != OK {
			if i := s.w.span.of(s.intended); i >= 0 {
				s.w.failed[i].Add(1)
			}
		}
	}
}

// Begin starts a pending observation of kind now: something the target
// owes and that will be known later, such as the event a stream must
// deliver for a completed call. When it ends it is recorded, like a
// request, in the step whose hold was open when it began — with the time
// since Begin as its latency — and a step waits for its pending
// observations (up to Scenario.Drain, then counted as timeouts) before it
// is judged. It is observed, not a request: it counts in no request rate.
func (r *Recorder) Begin(kind string) *Pending {
	k := r.kind(kind)
	s := r.begin(k, time.Now())
	if s.w != nil {
		s.w.stats(k).markObserved()
	}
	return &Pending{r: r, s: s}
}

// Request begins a request of kind that was meant to be sent at intended:
// the building block of a workload of your own. It counts as load offered
// in the step whose hold is open now, how late it starts (now − intended)
// feeds the generator's self-check, and End records its outcome with the
// latency from intended — so a request delayed by the generator or by a
// slow target is measured from when it should have gone (no coordinated
// omission). Pass time.Now() for a request not scheduled ahead.
func (r *Recorder) Request(kind string, intended time.Time) *Pending {
	s := r.begin(r.kind(kind), intended)
	r.offer(s, true, -1)
	return &Pending{r: r, s: s, request: true}
}

// Pending is a request begun by [Recorder.Request], or an observation begun
// by [Recorder.Begin] or [User.Begin], not yet ended. Exactly one of End and
// Abandon takes effect; later calls do nothing. It is safe for concurrent
// use.
type Pending struct {
	r       *Recorder
	s       span
	request bool
	done    atomic.Bool
}

// End records the outcome now; the latency runs from the intended send time
// (a request) or from Begin (an observation).
func (p *Pending) End(resp Response) {
	if p != nil && p.r != nil && p.done.CompareAndSwap(false, true) {
		p.r.finish(p.s, resp, time.Now(), p.request)
	}
}

// Abandon forgets the request or observation: nothing is recorded, such as
// for a request cancelled because the run stopped, or an event its user left
// before it was due.
func (p *Pending) Abandon() {
	if p != nil && p.r != nil && p.done.CompareAndSwap(false, true) {
		p.r.abandon(p.s)
	}
}

// abandon forgets a request that was cancelled because the run or its user
// stopped: it is no outcome of the target's.
func (r *Recorder) abandon(s span) {
	if s.w != nil {
		s.w.stats(s.kind).inflight.Add(-1)
	}
}

func (r *Recorder) recordLive(k int, lat time.Duration, resp Response, request bool) {
	l := (*r.live.Load())[k]
	l.mu.Lock()
	l.requests = l.requests || request
	if resp.Outcome != Dropped {
		recordHist(l.h, lat)
	}
	l.counts[resp.Outcome]++
	l.mu.Unlock()
}

// open starts a measurement window; samples scheduled from now on go to it.
func (r *Recorder) open() *window { return r.openHold(nil) }

// openHold starts the measurement window of a hold: samples scheduled from
// now on go to it, and requests begun in the hold's first and last thirds
// are counted for its trend (see Trend).
func (r *Recorder) openHold(h *thirds) *window {
	r.mu.Lock()
	n := len(r.list)
	r.mu.Unlock()
	w := &window{lag: newLiveHist(), span: h, kindCount: n}
	w.kinds.Store(&[]*kindStats{})
	w.units.Store(&[]*unitCounts{})
	r.window.Store(w)
	return w
}

// close stops attributing new requests to w. Requests already begun still
// complete into it.
func (r *Recorder) close(w *window) { r.window.CompareAndSwap(w, nil) }

// liveSnapshot returns and resets the live window: per kind, the latency
// histogram, outcome counts and requests begun since the previous call.
// The histograms it returns are reused by the next call (a snapshot every
// second would otherwise allocate one per kind each time): its one caller
// is done with them by then.
func (r *Recorder) liveSnapshot() liveWindow {
	var w liveWindow
	r.mu.Lock()
	w.names = append(w.names, r.list...)
	r.mu.Unlock()
	live := *r.live.Load()
	for i := range w.names {
		l := live[i]
		fresh := l.spare
		if fresh == nil {
			fresh = newLiveHist()
		} else {
			fresh.Reset()
		}
		l.mu.Lock()
		h, c, req := l.h, l.counts, l.requests
		l.h, l.counts = fresh, [result.NumOutcomes]int64{}
		l.mu.Unlock()
		l.spare = h
		w.hists = append(w.hists, h)
		w.counts = append(w.counts, c)
		w.begun = append(w.begun, l.begun.Swap(0))
		w.requests = append(w.requests, req)
	}
	return w
}

type liveStats struct {
	begun atomic.Int64 // requests begun since the last snapshot

	mu       sync.Mutex
	h        *hdrhistogram.Histogram
	counts   [result.NumOutcomes]int64
	requests bool // some sample was a request, not an observation

	spare *hdrhistogram.Histogram // the previous snapshot's, reused by the next (liveSnapshot's only)
}

// window accumulates the samples of one step's hold.
type window struct {
	mu        sync.Mutex // guards growth of kinds and units, and the lag histogram
	kinds     atomic.Pointer[[]*kindStats]
	scheduled atomic.Int64 // arrivals scheduled (open model) or calls begun
	lag       *hdrhistogram.Histogram
	// span places requests in the hold's thirds (nil: no trend is kept);
	// units holds each modeled user's counts by ID, kindCount the kinds
	// known when the window opened (a user's counts cover those).
	span      *thirds
	units     atomic.Pointer[[]*unitCounts]
	kindCount int
	// failed counts the requests begun in the hold's first and last
	// thirds that ended in any outcome but OK.
	failed [2]atomic.Int64
}

// inFlight returns the requests begun in the window and not yet ended.
func (w *window) inFlight() int64 {
	var n int64
	for _, ks := range *w.kinds.Load() {
		n += ks.inflight.Load()
	}
	return n
}

func (w *window) stats(k int) *kindStats {
	if ks := *w.kinds.Load(); k < len(ks) {
		return ks[k]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ks := *w.kinds.Load()
	if k < len(ks) {
		return ks[k]
	}
	grown := append([]*kindStats(nil), ks...)
	for len(grown) <= k {
		grown = append(grown, newKindStats())
	}
	w.kinds.Store(&grown)
	return grown[k]
}

// countAbove returns how many of h's values (µs) are above v, to the
// histogram's precision.
func countAbove(h *hdrhistogram.Histogram, v int64) int64 {
	var n int64
	for _, b := range h.Distribution() {
		if b.From > v {
			n += b.Count
		}
	}
	return n
}

// recordLag adds one schedule-lag sample: how late the generator sent a
// request relative to its plan.
func (w *window) recordLag(d time.Duration) {
	w.mu.Lock()
	recordHist(w.lag, d)
	w.mu.Unlock()
}

// kindStats is one kind's tally in one window.
type kindStats struct {
	inflight atomic.Int64 // begun in the window and not ended

	mu       sync.Mutex
	h        *hdrhistogram.Histogram
	queue    *hdrhistogram.Histogram // Response.Queued of requests
	answer   *hdrhistogram.Histogram // latency less Response.Queued: the target's part
	counts   [result.NumOutcomes]int64
	bytes    int64
	errs     []string
	requests bool // samples are requests (begun and ended), not observations
	observed bool // pending observations began in the window
	// alone counts the requests of no modeled user begun in the hold's
	// first and last thirds.
	alone [2]atomic.Int64
}

func (s *kindStats) markObserved() {
	s.mu.Lock()
	s.observed = true
	s.mu.Unlock()
}

func newKindStats() *kindStats {
	return &kindStats{h: newHist(), queue: newQueueHist(), answer: newQueueHist()}
}

// record adds one sample: the end of a request the generator issued
// (request), or an observation such as a fan-out delay.
func (s *kindStats) record(lat time.Duration, resp Response, request bool) {
	s.mu.Lock()
	s.requests = s.requests || request
	if resp.Outcome != Dropped {
		recordHist(s.h, lat)
	}
	if request {
		recordHist(s.queue, resp.Queued)
		if resp.Outcome != Dropped {
			recordHist(s.answer, max(lat-resp.Queued, 0))
		}
	}
	s.counts[resp.Outcome]++
	s.bytes += resp.Bytes
	full := len(s.errs) >= maxErrSamples
	s.mu.Unlock()
	if resp.Err != nil && !full {
		s.keepErr(resp.Outcome.String() + ": " + resp.Err.Error())
	}
}

func (s *kindStats) keepErr(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) >= maxErrSamples {
		return
	}
	for _, e := range s.errs {
		if e == msg {
			return
		}
	}
	s.errs = append(s.errs, msg)
}

// queued returns the p99 and the maximum of the generator-side waits of the
// window's requests.
func (w *window) queued() (p99, most time.Duration) {
	all := newQueueHist()
	for _, ks := range *w.kinds.Load() {
		ks.mu.Lock()
		all.Merge(ks.queue)
		ks.mu.Unlock()
	}
	if all.TotalCount() == 0 {
		return 0, 0
	}
	us := func(v int64) time.Duration {
		if v <= histMin {
			return 0 // recorded as the histogram's floor: no wait
		}
		return time.Duration(v) * time.Microsecond
	}
	return us(all.ValueAtPercentile(99)), us(all.Max())
}

// answered returns the merged answer-time histogram (latency less the
// generator's queue wait) of the kinds k selects.
func (w *window) answered(k func(int) bool) *hdrhistogram.Histogram {
	all := newQueueHist()
	for i, ks := range *w.kinds.Load() {
		if !k(i) {
			continue
		}
		ks.mu.Lock()
		all.Merge(ks.answer)
		ks.mu.Unlock()
	}
	return all
}

func newKindResult(name string, ks *kindStats) *result.KindResult {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	k := result.NewKindResult(name, ks.h.Clone())
	k.Bytes = ks.bytes
	k.Observed = ks.observed || (!ks.requests && ks.h.TotalCount()+ks.counts[Dropped] > 0)
	for o, c := range ks.counts {
		if c > 0 {
			k.Outcomes[Outcome(o)] = c
		}
	}
	k.Errors = append(k.Errors, ks.errs...)
	return k
}
