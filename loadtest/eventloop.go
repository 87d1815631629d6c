package loadtest

import (
	"context"
	"time"
)

// EventLoop is an engine that sends an open model's requests itself, on the
// schedule's own goroutine: it sleeps once for every arrival due within a
// short interval, sends them, and reads every answer that came meanwhile,
// as wrk does — instead of a goroutine per request in flight, each woken by
// the network poller, and the scheduler woken for every arrival. On a
// machine where a thread's sleep and wake-up cost more than the request
// itself (a virtual machine's idle exits), that is most of the generator's
// CPU. httpc.Client.Loop makes one for prepared HTTP/1.1 requests.
//
// Latency still runs from each arrival's intended time to the instant its
// answer came (the kernel's receive time where the engine has it), so an
// arrival sent late by the engine's batching is charged its lateness, and
// the schedule-lag self-check sees it.
type EventLoop interface {
	// Kinds is the number of request kinds the loop sends: Send's kind is
	// an index into Arrivals.Mix, whose length must match.
	Kinds() int
	// Send starts a request of kind for arrival id, bounded by timeout
	// (0: the engine's own); its end comes back through Wait.
	Send(kind, id int, timeout time.Duration)
	// Wait sleeps until until at the latest — sooner when an answer comes
	// and the engine's shortest interval between wake-ups has passed, or
	// when Wake is called — and reports every request that ended to done,
	// with the instant it ended. Only the schedule's goroutine calls Send
	// and Wait.
	Wait(until time.Time, done func(id int, resp Response, at time.Time))
	// Wake ends a Wait early; any goroutine may call it.
	Wake()
	// Close abandons the requests in flight, reporting none, and closes the
	// loop's connections.
	Close()
}

// loopDriver is the part of a running Arrivals workload that sends on an
// event loop: the spans of the requests in flight by id, and the arrivals
// waiting for MaxInFlight to make room. Only the schedule's goroutine
// touches it.
type loopDriver struct {
	loop    EventLoop
	spans   []span
	free    []int
	waiting []loopWait // oldest first, from head
	head    int
	done    func(id int, resp Response, at time.Time) // d.loopDone, made once
}

// loopWait is an arrival waiting for room under MaxInFlight.
type loopWait struct {
	mix int
	s   span
}

// scheduleLoop is schedule for an event loop: the same pacer, with the
// loop's Wait as the sleep and its Send as the worker.
func (d *arrivals) scheduleLoop() {
	defer close(d.doneCh)
	l := d.loop
	defer d.closeLoop()
	stop := context.AfterFunc(d.ctx, l.loop.Wake)
	defer stop()
	d.pace.need = d.pace.gap()
	far := 24 * time.Hour
	for d.ctx.Err() == nil {
		r, changed := d.lvl.get()
		at, ok := d.pace.plan(r)
		if !ok || time.Now().Before(at) {
			until := at
			if !ok {
				until = time.Now().Add(far)
			}
			l.loop.Wait(until, l.done)
			d.expireWaiting()
			select {
			case <-changed:
			default:
			}
			continue // re-plan: the level may have changed, or the wait ended early
		}
		if mix, _, own := d.pace.take(at); own { // no Do to seed: the loop's requests are prepared
			d.sendLoop(at, mix)
		}
	}
}

// sendLoop begins an arrival of Mix[mix] intended at at and sends it, or
// queues it while MaxInFlight requests are in flight.
func (d *arrivals) sendLoop(at time.Time, mix int) {
	s := d.rec.begin(d.kinds[mix], at)
	d.inflight.Add(1)
	d.rec.offer(s, true, -1)
	l := d.loop
	if len(l.spans)-len(l.free) >= d.cfg.MaxInFlight {
		if len(l.waiting)-l.head >= queueLen {
			d.finishSpan(s, Response{Outcome: Dropped}, time.Now())
			return
		}
		l.waiting = append(l.waiting, loopWait{mix: mix, s: s})
		return
	}
	d.startLoop(mix, s)
}

func (d *arrivals) startLoop(mix int, s span) {
	l := d.loop
	var id int
	if k := len(l.free); k > 0 {
		id = l.free[k-1]
		l.free = l.free[:k-1]
	} else {
		id = len(l.spans)
		l.spans = append(l.spans, span{})
	}
	l.spans[id] = s
	l.loop.Send(mix, id, d.cfg.Timeout)
}

// loopDone is the loop's report of a request's end.
func (d *arrivals) loopDone(id int, resp Response, at time.Time) {
	l := d.loop
	s := l.spans[id]
	l.spans[id] = span{}
	l.free = append(l.free, id)
	d.finishSpan(s, resp, at)
	// Room for the arrival waiting longest, unless it waited too long.
	for l.head < len(l.waiting) {
		w := l.waiting[l.head]
		l.waiting[l.head] = loopWait{}
		l.head++
		if l.head == len(l.waiting) {
			l.waiting, l.head = l.waiting[:0], 0
		}
		if time.Since(w.s.intended) > d.cfg.MaxWait {
			d.finishSpan(w.s, Response{Outcome: Dropped}, time.Now())
			continue
		}
		d.startLoop(w.mix, w.s)
		return
	}
}

// expireWaiting drops the arrivals that waited longer than MaxWait for
// room.
func (d *arrivals) expireWaiting() {
	l := d.loop
	for l.head < len(l.waiting) && time.Since(l.waiting[l.head].s.intended) > d.cfg.MaxWait {
		d.finishSpan(l.waiting[l.head].s, Response{Outcome: Dropped}, time.Now())
		l.waiting[l.head] = loopWait{}
		l.head++
	}
	if l.head == len(l.waiting) {
		l.waiting, l.head = l.waiting[:0], 0
	}
}

func (d *arrivals) finishSpan(s span, resp Response, at time.Time) {
	d.inflight.Add(-1)
	d.rec.end(s, resp, at)
}

// closeLoop abandons what is in flight or waiting when the schedule ends:
// the run cancelled them, the target did not answer them.
func (d *arrivals) closeLoop() {
	l := d.loop
	l.loop.Close()
	inUse := make([]bool, len(l.spans))
	for i := range inUse {
		inUse[i] = true
	}
	for _, id := range l.free {
		inUse[id] = false
	}
	for id, used := range inUse {
		if used {
			d.inflight.Add(-1)
			d.rec.abandon(l.spans[id])
		}
	}
	for _, w := range l.waiting[l.head:] {
		d.inflight.Add(-1)
		d.rec.abandon(w.s)
	}
	l.spans, l.free, l.waiting = nil, nil, nil
}
