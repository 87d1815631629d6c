// Package offstack runs deep work off a long-lived goroutine's stack.
//
// A goroutine that spends most of its life parked — a modeled user between
// calls, a held stream between events — costs its stack, and a stack never
// shrinks back to its starting 2 KiB once it has grown: the runtime halves
// a parked goroutine's stack only while less than a quarter of it is in
// use, counting 800 bytes of guard. Frames of a TLS read, JSON encoding or
// a recorded sample grow it, and so does any allocation, which may do a
// share of the garbage collector's marking on the allocating goroutine's
// stack. A Runner runs such work on a pooled worker goroutine, which keeps
// its grown stack for the next job, and the owner stays small as long as
// it itself allocates nothing.
//
// A user model that parks thousands of users between calls runs each act
// through a Runner (the relay's gateway users, examples/relay/relayload,
// do), and so does package sse for each held stream.
package offstack

import "time"

// A Runner runs functions off its owner's stack, one at a time: the
// goroutine that owns it calls Run. The zero value is ready.
type Runner struct {
	// Unpooled runs each function on a goroutine of its own, which ends
	// with it: for callers that may run inside a testing/synctest bubble,
	// whose goroutines and channels must not serve anyone outside it.
	Unpooled bool

	done chan struct{}
}

type job struct {
	f    func()
	done chan struct{}
}

// jobs hands jobs to idle workers.
var jobs = make(chan job)

// idleFor is how long a worker waits for its next job before it ends.
const idleFor = time.Second

// Run runs f on a worker goroutine and returns when f has returned; what
// f wrote is visible to the caller then. After its first call Run
// allocates nothing when a worker is idle: pass a function made once
// (a method value kept in a field), not a new closure each time, for the
// caller to allocate nothing at all. A panic in f ends the program, as in
// any goroutine.
func (r *Runner) Run(f func()) {
	if r.done == nil {
		r.done = make(chan struct{}, 1)
	}
	j := job{f: f, done: r.done}
	if r.Unpooled {
		go j.run()
		<-r.done
		return
	}
	select {
	case jobs <- j:
	default:
		go work(j)
	}
	<-r.done
}

func (j job) run() {
	j.f()
	j.done <- struct{}{}
}

// Run runs f on a goroutine of its own and returns when f has returned:
// for work done once, where a Runner is not at hand.
func Run(f func()) {
	r := Runner{Unpooled: true}
	r.Run(f)
}

// work runs j, then every job handed to it, until it has been idle for
// idleFor.
func work(j job) {
	idle := time.NewTimer(idleFor)
	defer idle.Stop()
	for {
		j.run()
		idle.Reset(idleFor)
		select {
		case j = <-jobs:
		case <-idle.C:
			return
		}
	}
}
