// Package interrupt turns a process's first SIGINT or SIGTERM into a
// cancelled context, so that runs stop cleanly and cleanups run, and its
// second into an exit after the registered hooks. loadtest.Interrupted is
// its public face; the fixtures register their removal of what they
// started.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// ErrInterrupted is the cause of the context [Context] returns once the
// process received SIGINT or SIGTERM.
var ErrInterrupted = errors.New("loadtest: interrupted")

// forcedExitCode is the exit status after a second interrupt (128 + SIGINT).
const forcedExitCode = 130

var (
	hooksMu sync.Mutex
	hooks   []func()
)

var interruptCtx = sync.OnceValue(func() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-ch
		cancel(fmt.Errorf("%w (%v): stopping cleanly; interrupt again to exit at once", ErrInterrupted, s))
		<-ch
		forcedExit()
	}()
	return ctx
})

// Context returns a process-wide context that is cancelled, with a
// cause wrapping [ErrInterrupted], when the process first receives SIGINT
// or SIGTERM. The first call installs the handler; from then on an
// interrupt no longer kills the process at once: runs stop cleanly and keep
// what they measured, setup fails fast, and cleanups run. A second
// interrupt runs the hooks registered with [OnForcedExit] (for at most 10 s)
// and exits with status 130.
func Context() context.Context { return interruptCtx() }

// OnForcedExit registers f to run when a second interrupt forces the
// process to exit, such as removing the containers and processes the
// process started. Hooks run concurrently and should be quick.
func OnForcedExit(f func()) {
	hooksMu.Lock()
	hooks = append(hooks, f)
	hooksMu.Unlock()
}

func forcedExit() {
	hooksMu.Lock()
	fs := append([]func(){}, hooks...)
	hooksMu.Unlock()
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, f := range fs {
			wg.Go(f)
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	fmt.Fprintln(os.Stderr, "loadtest: interrupted twice: exiting")
	os.Exit(forcedExitCode)
}
