package loadtest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// Ledger tallies a run's writes against what the target stored: the
// requests it acknowledged (accepted) and those that failed, counted by
// the generator, beside how many records its own store gained, read
// through Stored. A fault scenario uses it to say whether the system lost
// work it had acknowledged — a write answered before it was durable, a
// retry that dropped it — which latency and error rates cannot show.
//
// The tally counts, it does not match identities: Lost is the accepted
// writes beyond those held (a loss can hide behind a failed request the
// target completed anyway, which it may: its caller gave up, not it), and
// Twice the records beyond every request sent (done twice).
//
//	ledger := &loadtest.Ledger{Stored: countUsageRows}
//	require.NoError(t, ledger.Open(ctx)) // after seeding, before the run
//	do = ledger.Wrap(do, nil)
//	... Checks: []loadtest.Check{ledger.LosesNoAcceptedWork()}
type Ledger struct {
	// Stored returns how many records the target's store holds now (rows
	// of a table, keys of a bucket).
	Stored func(ctx context.Context) (int64, error)
	// ReadTimeout bounds one reading of Stored; default 10 s (a database
	// just resumed may be slow to answer).
	ReadTimeout time.Duration
	// Settle is how long a tally waits for acknowledged writes to land,
	// for a store that acknowledges before a write is durable or visible
	// (a queue, a replica's lag): it reads again until the writes
	// accepted at its start are held or Settle passes. 0, the default,
	// reads once: a store that acknowledges after it commits holds every
	// accepted write at once. The load goes on meanwhile, and its new
	// writes may hide a loss: keep Settle short.
	Settle time.Duration

	base                   int64
	opened                 atomic.Bool
	sent, accepted, failed atomic.Int64
}

// Tally is a ledger's count at one moment.
type Tally struct {
	// Accepted and Failed are the requests the generator saw answered as
	// accepted, and any other way (timeouts included).
	Accepted, Failed int64
	// Held is what the store gained since Open.
	Held int64
	// Lost is the accepted writes not held: Accepted − Held when
	// positive. Twice is what was held beyond every request sent (those
	// in flight too) when positive.
	Lost, Twice int64
}

// String reads "282 accepted, 21 failed, 290 held".
func (t Tally) String() string {
	return fmt.Sprintf("%d accepted, %d failed, %d held", t.Accepted, t.Failed, t.Held)
}

// Open reads what the store holds before the run; every tally counts from
// it. Call it after seeding.
func (l *Ledger) Open(ctx context.Context) error {
	if l.Stored == nil {
		return errors.New("loadtest: Ledger.Stored is nil; give the function that counts the target's records")
	}
	n, err := l.read(ctx)
	if err != nil {
		return fmt.Errorf("loadtest: the ledger's first reading: %w", err)
	}
	l.base = n
	l.sent.Store(0)
	l.accepted.Store(0)
	l.failed.Store(0)
	l.opened.Store(true)
	return nil
}

func (l *Ledger) read(ctx context.Context) (int64, error) {
	d := l.ReadTimeout
	if d <= 0 {
		d = 10 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return l.Stored(rctx)
}

// Wrap returns do counting each answer in the ledger: accepted when
// accepted(resp) says so (nil: an OK outcome), failed otherwise.
func (l *Ledger) Wrap(do func(context.Context) Response, accepted func(Response) bool) func(context.Context) Response {
	if accepted == nil {
		accepted = func(r Response) bool { return r.Outcome == OK }
	}
	return func(ctx context.Context) Response {
		l.sent.Add(1)
		r := do(ctx)
		if accepted(r) {
			l.accepted.Add(1)
		} else {
			l.failed.Add(1)
		}
		return r
	}
}

// Tally counts: the requests accepted and failed so far, then what the
// store holds — so that every accepted write a store commits before it
// answers is held — then the requests sent, in flight included, so that
// every write held was sent. While writes accepted at its start are
// missing it reads again, up to Settle.
func (l *Ledger) Tally(ctx context.Context) (Tally, error) {
	if !l.opened.Load() {
		return Tally{}, errors.New("loadtest: the ledger was not opened: call Ledger.Open before the run")
	}
	deadline := time.Now().Add(l.Settle)
	t := Tally{Accepted: l.accepted.Load(), Failed: l.failed.Load()}
	for {
		n, err := l.read(ctx)
		if err != nil {
			return t, err
		}
		t.Held = n - l.base
		t.Lost = max(t.Accepted-t.Held, 0)
		t.Twice = max(t.Held-l.sent.Load(), 0)
		if t.Lost == 0 || !time.Now().Before(deadline) || !sleep(ctx, min(200*time.Millisecond, time.Until(deadline))) {
			return t, nil
		}
	}
}

// Finding is the ledger's tally as a finding of the run, for
// Scenario.Analyze, so that the result says what the store held whether
// or not the check passed: Value is the accepted writes not held (a
// count), and the text the whole tally, e.g. "0 lost: 2051 accepted, 0
// failed, 2051 held".
func (l *Ledger) Finding(ctx context.Context) (result.Finding, error) {
	f := result.Finding{Name: "accepted work lost", Unit: "count"}
	t, err := l.Tally(ctx)
	if err != nil {
		f.Text = fmt.Sprintf("could not read what the target holds: %v", err)
		return f, err
	}
	f.Value, f.Low, f.High = float64(t.Lost), float64(t.Lost), float64(t.Lost)
	f.Text = fmt.Sprintf("%d lost: %s", t.Lost, t)
	if t.Twice > 0 {
		f.Text += fmt.Sprintf("; %d beyond every request sent (done twice)", t.Twice)
	}
	return f, nil
}

// LosesNoAcceptedWork checks, after every step, that the store holds
// every write the target accepted so far, and nothing beyond what was
// sent. A store it cannot read leaves the step unjudged.
func (l *Ledger) LosesNoAcceptedWork() Check { return ledgerCheck{l} }

type ledgerCheck struct{ l *Ledger }

func (c ledgerCheck) String() string { return "loses no accepted work" }

func (c ledgerCheck) Validate(_ []string) error {
	switch {
	case c.l == nil || c.l.Stored == nil:
		return fmt.Errorf("check %q: the ledger has no Stored function; give the one that counts the target's records", c)
	case !c.l.opened.Load():
		return fmt.Errorf("check %q: the ledger was not opened; call Ledger.Open after seeding, before the run", c)
	}
	return nil
}

func (c ledgerCheck) Evaluate(_ *StepResult) error {
	t, err := c.l.Tally(context.Background())
	switch {
	case err != nil:
		return fmt.Errorf("%w: %s: could not read what the target holds: %v", ErrInsufficientData, c, err)
	case t.Lost > 0:
		return fmt.Errorf("%s: %s: %d accepted and not held", c, t, t.Lost)
	case t.Twice > 0:
		return fmt.Errorf("%s: %s: %d held beyond every request sent (done twice)", c, t, t.Twice)
	}
	return nil
}
