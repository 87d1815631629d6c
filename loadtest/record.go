package loadtest

import (
	"errors"

	"github.com/headroom-dev/headroom/internal/interrupt"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// A run's written record lives in package loadtest/result; these are the
// names of it a scenario uses most, so that it needs no second import.
type (
	// Result is a whole run, as Test returns and writes it.
	Result = result.Result
	// StepResult is what one step measured; a Check judges it.
	StepResult = result.StepResult
	// Step is one load level of a plan.
	Step = result.Step
	// Outcome classifies how one request ended.
	Outcome = result.Outcome
)

// The outcomes of a request (see result.Outcome).
const (
	OK             = result.OK
	AppError       = result.AppError
	HTTP3xx        = result.HTTP3xx
	HTTP4xx        = result.HTTP4xx
	HTTP5xx        = result.HTTP5xx
	TransportError = result.TransportError
	Timeout        = result.Timeout
	ProtocolError  = result.ProtocolError
	Dropped        = result.Dropped
	// AllRequests names every request kind of a step taken together, for
	// checks: LatencyBelow(AllRequests, 95, 300*time.Millisecond).
	AllRequests = result.AllRequests
)

// The classes of what [Result.Err] reports, and the marks a check, a
// sampler or an interrupt puts on its error; test them with errors.Is.
var (
	// ErrBreach: a step violated a check, or no step passed.
	ErrBreach = result.ErrBreach
	// ErrInvalid: a step said nothing about the target — the generator was
	// the bottleneck, or a check had too little data to judge.
	ErrInvalid = result.ErrInvalid
	// ErrIncomplete: the run stopped before its plan ended (an interrupt,
	// the test's deadline).
	ErrIncomplete = result.ErrIncomplete
	// ErrRegression: the run regressed against its baseline.
	ErrRegression = result.ErrRegression
	// ErrSystemDown marks a check's violation as a component of the system
	// under test stopping during the step (killed, out of memory, exited):
	// the step fails, and harness troubles that follow do not make it
	// invalid (StepResult.Down).
	ErrSystemDown = errors.New("system under test down")
	// ErrInsufficientData marks the error of a check that could not judge
	// a step because the step measured too little: the step is invalid.
	ErrInsufficientData = errors.New("too little data to judge")
	// ErrHarness marks a sampler's error as a fault of the harness, not of
	// the system under test: a proxy of the harness exited, a port stopped
	// accepting. A step whose hold saw one is invalid, with the error as
	// its reason — wrap it: fmt.Errorf("%w: docker-proxy of caddy exited",
	// ErrHarness).
	ErrHarness = errors.New("harness fault")
	// ErrInterrupted is the cause of the context [Interrupted] returns
	// once the process received SIGINT or SIGTERM.
	ErrInterrupted = interrupt.ErrInterrupted
)
