package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Kind is one kind of request in an open-model mix.
type Kind struct {
	// Name identifies the kind in results and checks ("tools/call").
	Name string
	// Weight is the kind's share of arrivals, relative to the others; > 0.
	Weight float64
	// Do issues one request and reports its outcome. It must return when
	// ctx is done. Rand(ctx) is the arrival's random source (pages, ids,
	// payloads), seeded from Scenario.Seed and the arrival's place in the
	// schedule, so a run repeats with its seed.
	Do func(ctx context.Context) Response
}

// Arrivals is the open model: requests arrive at the rate the plan's level
// sets (arrivals per second) whatever the target's response times, each
// arrival picking a kind from Mix by weight. Latency is measured from the
// intended send time, so a stalled target shows in the percentiles instead
// of slowing the generator down (no coordinated omission).
//
// Each arrival is handed to a worker; workers are started on demand up to
// MaxInFlight. An arrival that finds no free worker within MaxWait — every
// worker busy with the target and MaxInFlight reached — is counted as
// dropped, never silently skipped. An arrival handed to a worker that
// starts it late (the generator's own goroutines waiting for a core) is
// sent, its latency still measured from the intended time: that lateness
// is not the target's doing, and a drop would be charged to the target.
type Arrivals struct {
	// Mix is the request kinds and their weights; at least one.
	Mix []Kind
	// Poisson draws exponential gaps between arrivals (a Poisson process)
	// instead of the default constant spacing.
	Poisson bool
	// MaxInFlight bounds concurrent requests, and so connections; default
	// 10,000.
	MaxInFlight int
	// MaxWait is how long an arrival may wait for a free worker before it
	// is dropped; default 100 ms.
	MaxWait time.Duration
	// Timeout, when > 0, is a deadline on each request's context. The
	// default leaves timeouts to the request function (clients in
	// loadtest/httpc carry their own).
	Timeout time.Duration
	// Loop, when set, sends the mix's requests on an event loop instead of
	// calling each Kind's Do on a goroutine: Mix[i]'s requests are the
	// loop's kind i, and Do may be nil. httpc.Client.Loop makes one for
	// prepared requests: at high rates it spends a fraction of the CPU per
	// request (see EventLoop). One running workload at a time may use a
	// loop.
	Loop EventLoop
}

// KindNames implements Workload.
func (a *Arrivals) KindNames() []string {
	var ks []string
	for _, k := range a.Mix {
		ks = append(ks, k.Name)
	}
	return ks
}

// Validate implements Workload.
func (a *Arrivals) Validate() error {
	var errs []error
	if len(a.Mix) == 0 {
		errs = append(errs, errors.New("workload: Arrivals.Mix is empty; give at least one Kind{Name, Weight, Do}"))
	}
	seen := map[string]bool{}
	for i, k := range a.Mix {
		switch {
		case k.Name == "":
			errs = append(errs, fmt.Errorf("workload: Mix[%d].Name is empty; name every kind", i))
		case seen[k.Name]:
			errs = append(errs, fmt.Errorf("workload: Mix[%d].Name %q is used twice; kind names must be unique", i, k.Name))
		}
		seen[k.Name] = true
		if !(k.Weight > 0) || math.IsInf(k.Weight, 0) {
			errs = append(errs, fmt.Errorf("workload: Mix[%d] (%s).Weight is %v; give a positive weight", i, k.Name, k.Weight))
		}
		if k.Do == nil && a.Loop == nil {
			errs = append(errs, fmt.Errorf("workload: Mix[%d] (%s).Do is nil; give the function that issues the request", i, k.Name))
		}
	}
	if a.Loop != nil && a.Loop.Kinds() != len(a.Mix) {
		errs = append(errs, fmt.Errorf("workload: Arrivals.Loop sends %d kinds of request and Mix has %d; make the loop with one request per Mix entry, in Mix's order", a.Loop.Kinds(), len(a.Mix)))
	}
	if a.MaxInFlight < 0 {
		errs = append(errs, fmt.Errorf("workload: Arrivals.MaxInFlight is %d; give a positive bound or 0 for the default", a.MaxInFlight))
	}
	if a.MaxWait < 0 || a.Timeout < 0 {
		errs = append(errs, fmt.Errorf("workload: Arrivals.MaxWait %v and Timeout %v must be >= 0", a.MaxWait, a.Timeout))
	}
	return errors.Join(errs...)
}

// Model names the open model in results.
func (a *Arrivals) Model() string { return "arrivals" }

// queueLen bounds arrivals waiting for a worker.
const queueLen = 4096

// shortWait is the longest wait for the next arrival the scheduler sleeps
// through without watching for a level change or the run's end.
const shortWait = time.Millisecond

// Start implements Workload.
func (a *Arrivals) Start(ctx context.Context, rec *Recorder, seed uint64) Driver {
	return a.startShard(ctx, rec, seed, result.Shard{})
}

// startShard starts the workload as one shard of the schedule: every shard
// computes the whole schedule of the seed and dispatches its own slice.
func (a *Arrivals) startShard(ctx context.Context, rec *Recorder, seed uint64, sh result.Shard) Driver {
	env := runEnv{rec: rec, seed: seed}
	d := &arrivals{
		cfg:    *a,
		rec:    env.rec,
		lvl:    newLevel(),
		jobs:   make(chan job, queueLen),
		rng:    dist.New(env.seed, math.MaxUint64),
		seed:   env.seed,
		kinds:  make([]int, len(a.Mix)),
		ctx:    ctx,
		doneCh: make(chan struct{}),
	}
	if d.cfg.MaxInFlight == 0 {
		d.cfg.MaxInFlight = 10_000
	}
	if d.cfg.MaxWait == 0 {
		d.cfg.MaxWait = 100 * time.Millisecond
	}
	opts := make([]dist.Weighted[int], len(a.Mix))
	for i, k := range a.Mix {
		d.kinds[i] = env.rec.kind(k.Name)
		opts[i] = dist.Weighted[int]{Weight: k.Weight, Value: i}
	}
	d.choice, _ = dist.NewChoice(opts...) // validated
	d.pace = pacer{rng: d.rng, choice: d.choice, poisson: a.Poisson, shard: sh}
	d.ctx, d.cancel = context.WithCancelCause(ctx)
	if a.Loop != nil {
		d.loop = &loopDriver{loop: a.Loop}
		d.loop.done = d.loopDone
		go d.scheduleLoop()
		return d
	}
	go d.schedule()
	return d
}

// arrivals is a running open-model workload.
type arrivals struct {
	cfg    Arrivals
	rec    *Recorder
	lvl    *level
	jobs   chan job
	rng    *rand.Rand
	seed   uint64
	choice dist.Choice[int]
	kinds  []int       // recorder index of each Mix entry
	pace   pacer       // used by the scheduler's goroutine only
	loop   *loopDriver // when the requests go out on an event loop; the scheduler's goroutine's

	ctx    context.Context
	cancel context.CancelCauseFunc
	doneCh chan struct{} // closed when the scheduler returns

	// Workers: idle ones wait on a slot each, kept last in, first out
	// under mu, so that an arrival goes to the worker idle the shortest
	// time — its stack and what it touched still in the cache — and the
	// few workers a fast target needs do all the work. (A channel every
	// idle worker waited on handed each arrival to the one idle longest:
	// at 20,000/s, copying the job onto its cold stack alone took 4% of
	// the generator's CPU.) jobs holds the arrivals that wait for a worker
	// once MaxInFlight are busy.
	mu       sync.Mutex
	idle     []*slot
	workers  int
	stopped  bool
	inflight atomic.Int64
	wg       sync.WaitGroup
}

// slot is an idle worker's: it receives the worker's next arrival, or is
// closed when the workload stops.
type slot struct{ ch chan job }

// job is one scheduled arrival on its way to a worker.
type job struct {
	mix  int
	n    uint64 // the arrival's place in the schedule: its random stream
	span span
	// bounded says the arrival waits for a worker to free up: MaxInFlight
	// were running and none was idle. Only such an arrival is dropped when
	// it waited longer than MaxWait.
	bounded bool
}

func (d *arrivals) Ramp(level float64, dur time.Duration) { d.rampAt(level, dur, time.Now()) }

func (d *arrivals) rampAt(level float64, dur time.Duration, at time.Time) {
	d.lvl.set(level, dur, at)
	if d.loop != nil {
		d.loop.loop.Wake() // the loop's sleep does not watch the level
	}
}

func (d *arrivals) InFlight() int64 { return d.inflight.Load() }

func (d *arrivals) Stop() {
	d.cancel(errStopped)
	<-d.doneCh
	d.mu.Lock()
	d.stopped = true
	for _, w := range d.idle {
		close(w.ch)
	}
	d.idle = nil
	d.mu.Unlock()
	d.wg.Wait()
}

// schedule is the pacer: it computes each arrival's intended time from the
// level, sleeps until then and hands the arrival to a worker. It never waits
// for a worker, so a slow target cannot slow the schedule down. A shard
// sleeps until every arrival of the whole schedule, its own or not, so that
// a level change lands between the same two arrivals in every shard.
func (d *arrivals) schedule() {
	defer close(d.doneCh)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	d.pace.need = d.pace.gap()
	for {
		r, changed := d.lvl.get()
		at, ok := d.pace.plan(r)
		if !ok { // no load until the level changes
			select {
			case <-changed:
				continue
			case <-d.ctx.Done():
				return
			}
		}
		if wait := time.Until(at); wait > 0 && wait <= shortWait {
			// A short wait, the usual one between arrivals, sleeps: a
			// sleeping goroutine is woken by its timer directly, where a
			// select costs a channel send and three channels' locks per
			// arrival. A level change or the end of the run is noticed
			// on waking, at most shortWait late.
			time.Sleep(wait)
			if d.ctx.Err() != nil {
				return
			}
			select {
			case <-changed:
				continue // re-plan under the new level
			default:
			}
		} else if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-changed:
				// Re-plan under the new level.
				if !timer.Stop() {
					<-timer.C
				}
				continue
			case <-d.ctx.Done():
				return
			}
		}
		if mix, n, own := d.pace.take(at); own {
			d.dispatch(at, mix, n)
		}
	}
}

// pacer is the arrival schedule as a pure computation: from the seed's
// random stream and the level's ramps it yields every arrival's intended
// time and kind, the same in every shard, and says which arrivals are the
// shard's own (arrival i belongs to shard i mod Count).
type pacer struct {
	rng     *rand.Rand
	choice  dist.Choice[int]
	poisson bool
	shard   result.Shard

	next time.Time // the previous arrival's time
	need float64   // work (in arrivals) until the next arrival
	n    uint64    // arrivals so far
}

// plan returns the next arrival's time under the ramp r. A ramp's start
// resets the schedule: the work towards the next arrival done before it is
// dropped and the arrival planned from the start, wherever the pacer was —
// so the schedule depends on the ramps' instants, not on when they were
// set. Before a ramp set ahead starts, the ramp before it is in force.
func (p *pacer) plan(r rampState) (time.Time, bool) {
	from := p.next
	if from.Before(r.start) {
		if r.prev != nil {
			if at, ok := nextArrival(*r.prev, later(from, r.prev.start), p.need); ok && at.Before(r.start) {
				return at, true
			}
		}
		from = r.start
	}
	return nextArrival(r, from, p.need)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// take consumes the arrival at at: draws the next gap and the arrival's
// kind (for every arrival, so the random stream is the same in every
// shard) and reports whether the arrival is the shard's.
func (p *pacer) take(at time.Time) (mix int, n uint64, own bool) {
	p.next, p.need = at, p.gap()
	mix, n = p.choice.Pick(p.rng), p.n
	own = owns(p.shard, p.n)
	p.n++
	return mix, n, own
}

// gap returns the work (in arrivals) until the next arrival: 1 for constant
// spacing, an exponential draw for a Poisson process.
func (p *pacer) gap() float64 {
	if p.poisson {
		return p.rng.ExpFloat64()
	}
	return 1
}

// nextArrival returns the time after from at which the ramp r has produced
// need arrivals (the integral of the rate reaches need), and false when the
// rate stays at zero.
func nextArrival(r rampState, from time.Time, need float64) (time.Time, bool) {
	t := from
	for {
		rate := r.at(t)
		if !t.Before(r.end()) || r.dur <= 0 {
			if rate <= 0 {
				return time.Time{}, false
			}
			return t.Add(dist.Seconds(need / rate)), true
		}
		// Ramping: walk it in chunks, each linear, and solve inside the
		// chunk where the integral reaches need.
		chunk := min(10*time.Millisecond, r.end().Sub(t))
		r1 := r.at(t.Add(chunk))
		sec := chunk.Seconds()
		area := (rate + r1) / 2 * sec
		if area >= need {
			k := (r1 - rate) / sec // rate slope per second
			var x float64
			if math.Abs(k) < 1e-12 {
				x = need / rate
			} else { // rate·x + k·x²/2 = need
				x = (-rate + math.Sqrt(rate*rate+2*k*need)) / k
			}
			return t.Add(dist.Seconds(x)), true
		}
		need -= area
		t = t.Add(chunk)
	}
}

// dispatch begins arrival n, of Mix[mix] intended at at, and hands it to
// a worker.
func (d *arrivals) dispatch(at time.Time, mix int, n uint64) {
	s := d.rec.begin(d.kinds[mix], at)
	d.inflight.Add(1)
	d.rec.offer(s, true, -1)
	j := job{mix: mix, n: n, span: s}
	d.mu.Lock()
	if k := len(d.idle); k > 0 { // the worker idle the shortest time
		w := d.idle[k-1]
		d.idle[k-1] = nil
		d.idle = d.idle[:k-1]
		d.mu.Unlock()
		w.ch <- j // buffered: never blocks
		return
	}
	if d.workers < d.cfg.MaxInFlight {
		d.workers++
		d.wg.Add(1)
		d.mu.Unlock()
		go d.worker(j)
		return
	}
	j.bounded = true
	select {
	case d.jobs <- j:
		d.mu.Unlock()
	default: // every worker busy and the queue full
		d.mu.Unlock()
		d.finish(j, Response{Outcome: Dropped})
	}
}

func (d *arrivals) worker(first job) {
	defer d.wg.Done()
	// One random source a worker, reseeded for every arrival it makes.
	src := &arrivalRand{pcg: rand.NewPCG(0, 0)}
	src.r = rand.New(src.pcg)
	ctx := context.WithValue(d.ctx, randKey{}, src.r)
	w := &slot{ch: make(chan job, 1)}
	d.run(ctx, src, first)
	for {
		// An arrival waiting for a worker first; else idle, last in.
		// Under mu, as dispatch decides: an arrival is queued only while
		// no worker is idle, so none is left in the queue beside an idle
		// worker.
		d.mu.Lock()
		select {
		case j := <-d.jobs:
			d.mu.Unlock()
			d.run(ctx, src, j)
			continue
		default:
		}
		if d.stopped {
			d.mu.Unlock()
			return
		}
		d.idle = append(d.idle, w)
		d.mu.Unlock()
		j, ok := <-w.ch
		if !ok {
			return
		}
		d.run(ctx, src, j)
	}
}

// arrivalRand is a worker's random source, Rand(ctx) in Kind.Do.
type arrivalRand struct {
	pcg *rand.PCG
	r   *rand.Rand
}

// randKey carries a request's random source in its context.
type randKey struct{}

// Rand returns the random source of the request whose context ctx is: in
// an Arrivals Kind.Do, the arrival's own, seeded from Scenario.Seed and
// the arrival's place in the schedule (the same in every run of the seed,
// and in every shard); elsewhere a source of seed 0. It is the caller's
// alone until Do returns.
func Rand(ctx context.Context) *rand.Rand {
	if r, ok := ctx.Value(randKey{}).(*rand.Rand); ok {
		return r
	}
	return dist.New(0, 0)
}

func (d *arrivals) run(wctx context.Context, src *arrivalRand, j job) {
	if d.ctx.Err() != nil {
		d.inflight.Add(-1)
		d.rec.abandon(j.span)
		return
	}
	if j.bounded && time.Since(j.span.intended) > d.cfg.MaxWait {
		d.finish(j, Response{Outcome: Dropped})
		return
	}
	src.pcg.Seed(d.seed, j.n^0x9e3779b97f4a7c15) // dist.New(seed, n)
	ctx := wctx
	if d.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.cfg.Timeout)
		defer cancel()
	}
	resp := d.cfg.Mix[j.mix].Do(ctx)
	if d.ctx.Err() != nil { // cancelled by the run, not answered by the target
		d.inflight.Add(-1)
		d.rec.abandon(j.span)
		return
	}
	if resp.Outcome != OK && ctx.Err() == context.DeadlineExceeded {
		resp.Outcome = Timeout
	}
	d.finish(j, resp)
}

func (d *arrivals) finish(j job, resp Response) {
	d.inflight.Add(-1)
	d.rec.end(j.span, resp, time.Now())
}
