package loadtest

import (
	"context"

	"github.com/headroom-dev/headroom/internal/interrupt"
)

// Interrupted returns a process-wide context that is cancelled, with a
// cause wrapping [ErrInterrupted], when the process first receives SIGINT
// or SIGTERM. The first call installs the handler; from then on an
// interrupt no longer kills the process at once: runs stop cleanly and keep
// what they measured, setup fails fast, and cleanups run (the fixtures
// remove what they started). A second interrupt runs those removals (for
// at most 10 s) and exits with status 130.
func Interrupted() context.Context { return interrupt.Context() }
