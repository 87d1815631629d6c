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

// Users is the modeled-users workload: the plan's level is a number of
// concurrent users, each running Behavior in its own goroutine until the
// run or the ramp-down stops it. A behaviour issues requests through its
// [User] handle and sleeps on think times between them, so the load follows
// the users, not a rate: a closed model, named so nobody picks it by
// accident. Ramps start users evenly spread over the ramp; a behaviour
// that pauses with [User.Think] starts each user at a random point of its
// cycle, so that a hold measures the level's steady state (the step's
// self-check voids a hold whose offered load drifts).
type Users struct {
	// Kinds lists every kind the behaviour records; checks may name only
	// these. Recording another kind is allowed but not checkable.
	Kinds []string
	// Behavior is one user's life. It must return when u.Context() is
	// done; returning earlier ends that user.
	Behavior func(u *User)
	// Timeout, when > 0, is a deadline on each request's context.
	Timeout time.Duration
	// Limiters are the generator's bounds the users' requests wait on,
	// such as the shared HTTP client; the scenario is refused before it
	// starts when one is smaller than the plan's top level needs.
	Limiters []Limiter
	// InFlightPerUser is the most requests one user holds in flight at
	// once through the Limiters (held streams on their own connections
	// excluded); default 1.
	InFlightPerUser int
}

// KindNames implements Workload.
func (w *Users) KindNames() []string { return append([]string(nil), w.Kinds...) }

// Validate implements Workload.
func (w *Users) Validate() error {
	var errs []error
	if w.Behavior == nil {
		errs = append(errs, errors.New("workload: Users.Behavior is nil; give the function one user runs"))
	}
	if len(w.Kinds) == 0 {
		errs = append(errs, errors.New("workload: Users.Kinds is empty; list the kinds the behaviour records"))
	}
	if w.Timeout < 0 {
		errs = append(errs, fmt.Errorf("workload: Users.Timeout is %v; give a duration >= 0", w.Timeout))
	}
	if w.InFlightPerUser < 0 {
		errs = append(errs, fmt.Errorf("workload: Users.InFlightPerUser is %d; give a positive number or 0 for the default 1", w.InFlightPerUser))
	}
	return errors.Join(errs...)
}

// Model names the closed model in results.
func (w *Users) Model() string { return "users" }

// Start implements Workload.
func (w *Users) Start(ctx context.Context, rec *Recorder, seed uint64) Driver {
	return w.startShard(ctx, rec, seed, result.Shard{})
}

// startShard starts the workload as one shard: of the users the level asks
// for, it runs those whose ID is the shard's (ID mod Count = Index), each
// with the same random sequence it would have in one process.
func (w *Users) startShard(ctx context.Context, rec *Recorder, seed uint64, sh result.Shard) Driver {
	env := runEnv{rec: rec, seed: seed}
	d := &users{cfg: *w, env: env, lvl: newLevel(), shard: sh}
	d.ctx, d.cancel = context.WithCancelCause(ctx)
	d.wg.Add(1)
	go d.control()
	return d
}

// User is the handle a behaviour acts through: it times and records the
// user's requests, sleeps its think times and owns its goroutines.
type User struct {
	// ID is the user's index in the run, from 0; the same ID always gets
	// the same random sequence for the same seed.
	ID int
	// Rand is the user's own seeded generator, for think times and choices.
	Rand *rand.Rand

	ctx context.Context
	d   *users
	wg  sync.WaitGroup
	// timer is Sleep's, used by one sleeping goroutine at a time: the
	// one that set sleeping.
	timer    *time.Timer
	sleeping atomic.Bool
	// late is how far behind its own pace the main sleeper is: the lag of
	// its last wake-up, made up at the next Sleep.
	late time.Duration
	// thought is set once the user has had its first Think.
	thought bool
	// ready is set once the user has done its start-up work (Ready).
	ready atomic.Bool
}

// Context returns the user's context, done when the user must stop.
func (u *User) Context() context.Context { return u.ctx }

// Do issues one request of kind through fn and records it; the latency runs
// from the call to Do to fn's return. A request cut short because the user
// was stopped is not recorded.
func (u *User) Do(kind string, fn func(ctx context.Context) Response) Response {
	rec := u.d.env.rec
	s := rec.begin(rec.kind(kind), time.Now())
	rec.offer(s, false, u.ID)
	u.d.inflight.Add(1)
	defer u.d.inflight.Add(-1)
	ctx := u.ctx
	if u.d.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, u.d.cfg.Timeout)
		defer cancel()
	}
	resp := fn(ctx)
	now := time.Now()
	if s.w != nil {
		s.w.waited(u.ID, s.intended, now)
	}
	if u.ctx.Err() != nil {
		rec.abandon(s)
		return resp
	}
	if resp.Outcome != OK && ctx.Err() == context.DeadlineExceeded {
		resp.Outcome = Timeout
	}
	rec.end(s, resp, now)
	return resp
}

// Record adds a sample measured by the user outside Do, such as the fan-out
// delay of an event on its stream. It implements [Sink].
func (u *User) Record(kind string, latency time.Duration, r Response) {
	if u.ctx.Err() == nil {
		u.d.env.rec.Record(kind, latency, r)
	}
}

// Begin starts a pending observation of kind for this user, such as an
// event its stream must deliver; see [Recorder.Begin]. A user that is
// stopping gets a Pending that records nothing.
func (u *User) Begin(kind string) *Pending {
	if u.ctx.Err() != nil {
		return &Pending{}
	}
	return u.d.env.rec.Begin(kind)
}

// Sleep waits d (a think time) and reports whether the user should go on:
// false once the user is stopping. How late the wake-up came is the
// generator's schedule lag, and the user makes it up at its next think
// time: the wait after a wake-up the generator made late by L is d − L (none
// when L ≥ d, the rest carried on), so that each user keeps the pace it
// would have had on time. Without it every late wake-up would push its user
// back for good, and users woken late together — a burst the generator
// could not serve at once — would stay bunched at every later think time,
// their requests queued behind one another in the generator and timed as
// the target's.
func (u *User) Sleep(d time.Duration) bool {
	u.Ready()
	if d <= 0 {
		return u.ctx.Err() == nil
	}
	now := time.Now()
	// One timer per user, reset for each sleep, so that a sleeping user's
	// goroutine allocates nothing, which keeps its stack small (see
	// gatewayUser.live in the mcp package); a second goroutine of the user
	// (Go) sleeping at the same time gets a timer of its own and keeps no
	// pace: the debt is the user's main sleeper's.
	own := u.sleeping.CompareAndSwap(false, true)
	if own {
		defer u.sleeping.Store(false)
		d -= u.late
	}
	planned := now.Add(d)
	if d > 0 {
		var t *time.Timer
		if own {
			if u.timer == nil {
				u.timer = time.NewTimer(d)
			} else {
				u.timer.Reset(d)
			}
			t = u.timer
		} else {
			t = time.NewTimer(d)
		}
		select {
		case <-t.C:
		case <-u.ctx.Done():
			t.Stop()
			return false
		}
	} else if u.ctx.Err() != nil {
		return false
	}
	// Woken late, or already due at the call (the generator still behind
	// this user): either way the lag, made up next time.
	lag := time.Since(planned)
	if own {
		u.late = lag
	}
	if w := u.d.env.rec.window.Load(); w != nil {
		w.recordLag(lag)
	}
	return true
}

// Think sleeps a think time drawn from d and reports whether the user
// should go on, as [User.Sleep] does. The user's first Think draws instead
// what is left of the think time a random instant falls in
// ([dist.Residual]): the user starts at a random point of its own cycle,
// so that users started together — by a ramp, by a step — are not in
// phase, and the load they make is their level's steady state from the
// first second of a hold, not a start-up surge that decays over several
// cycles. A behaviour whose every pause between requests is a Think is
// stationary by construction; one that starts its cycle another way draws
// its first pause with dist.Residual itself. (Time spent waiting for
// answers is not part of the draw: the start is exact when answers are
// short beside the think times.) Call it from the user's own goroutine:
// it draws from u.Rand.
func (u *User) Think(d dist.Dist[time.Duration]) bool {
	var pause time.Duration
	if u.thought {
		pause = d.Sample(u.Rand)
	} else {
		u.thought = true
		pause = dist.Residual(d, u.Rand)
	}
	return u.Sleep(pause)
}

// Ready tells the generator the user has done its start-up work —
// connected, logged in, loaded its first page — and from now on runs its
// steady cycle. A step's hold begins only once every user its ramp started
// is ready (up to Scenario.Drain after the ramp), so that the start-up
// work of a ramp's users, queued at a slow target, is the ramp's and not
// measured as the hold's load. A user is ready, without calling it, at
// its first Sleep or Think (it pauses of its own accord) and when its
// behaviour returns; call it where start-up ends and no pause follows.
// Calling it again does nothing.
func (u *User) Ready() {
	if u.ready.CompareAndSwap(false, true) {
		u.d.starting.Add(-1)
	}
}

// Go runs fn in a goroutine owned by the user, such as the reader of a held
// stream; fn must return when ctx is done. The user is not finished until
// fn returns.
func (u *User) Go(fn func(ctx context.Context)) {
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		fn(u.ctx)
	}()
}

// users is a running modeled-users workload.
type users struct {
	cfg    Users
	env    runEnv
	lvl    *level
	shard  result.Shard
	ctx    context.Context
	cancel context.CancelCauseFunc
	// global is the number of users of the whole run (all shards) the
	// control loop has started and not stopped; users 0..global-1 run,
	// the shard's own among them here. running mirrors it for other
	// goroutines.
	global  int
	running atomic.Int64

	mu       sync.Mutex
	active   []context.CancelFunc // the shard's running users, by ID ascending
	inflight atomic.Int64
	// starting counts the shard's users started and not yet ready.
	starting atomic.Int64
	wg       sync.WaitGroup
}

func (d *users) Ramp(level float64, dur time.Duration) { d.lvl.set(level, dur, time.Now()) }

func (d *users) rampAt(level float64, dur time.Duration, at time.Time) { d.lvl.set(level, dur, at) }

func (d *users) InFlight() int64 { return d.inflight.Load() }

// Running implements settler: the users started and not stopped.
func (d *users) Running() float64 { return float64(d.running.Load()) }

// Starting implements starter: the users started and not yet ready.
func (d *users) Starting() int64 { return d.starting.Load() }

func (d *users) Stop() {
	d.cancel(errStopped)
	d.wg.Wait()
}

// control keeps the number of running users at the ramp's level, starting
// (or stopping) one user at a time at evenly spread instants.
func (d *users) control() {
	defer d.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		r, changed := d.lvl.get()
		n := d.global
		target := int(math.Round(r.to))
		var wait time.Duration
		switch {
		case n == target:
			select {
			case <-changed:
				continue
			case <-d.ctx.Done():
				return
			}
		case r.dur <= 0 || r.to == r.from:
			wait = time.Until(r.start) // a jump, perhaps set ahead
		default:
			// The instant the ramp passes the level of the next user:
			// user k of the change starts at start + dur·k/Δ.
			from := int(math.Round(r.from))
			k := math.Abs(float64(n - from))
			delta := math.Abs(float64(target - from))
			at := r.start.Add(time.Duration(float64(r.dur) * k / delta))
			wait = time.Until(at)
		}
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-changed:
				if !timer.Stop() {
					<-timer.C
				}
				continue
			case <-d.ctx.Done():
				return
			}
		}
		if n < target {
			d.global++
			d.running.Store(int64(d.global))
			if owns(d.shard, uint64(n)) {
				d.startUser(n)
			}
		} else {
			d.global--
			d.running.Store(int64(d.global))
			if owns(d.shard, uint64(d.global)) {
				d.stopUser()
			}
		}
	}
}

func (d *users) startUser(id int) {
	d.mu.Lock()
	ctx, cancel := context.WithCancel(d.ctx)
	d.active = append(d.active, cancel)
	d.mu.Unlock()
	u := &User{ID: id, Rand: dist.New(d.env.seed, uint64(id)), ctx: ctx, d: d}
	d.starting.Add(1)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.cfg.Behavior(u)
		u.Ready()
		u.wg.Wait()
	}()
}

func (d *users) stopUser() {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.active)
	d.active[n-1]()
	d.active = d.active[:n-1]
}
