package result

import (
	"fmt"
	"time"
)

// Health says when a window of a step's timeline is healthy, for judging
// a fault (loadtest.Fault): when the load first saw it and when it
// recovered. A window is unhealthy when more than MaxFailures of what
// ended in it failed, when under half of what was offered was answered,
// when nothing was answered while requests were in flight (a frozen
// target), or when MaxP95 is set and a request kind's p95 passed it.
type Health struct {
	// Windows is how many healthy windows in a row mark a recovery;
	// default 3.
	Windows int `json:"windows"`
	// MaxFailures is the share of a window's requests that may fail, in
	// [0, 1]; default 0.01.
	MaxFailures float64 `json:"max_failures"`
	// MaxP95 bounds every request kind's p95 in a window; 0 judges no
	// latency.
	MaxP95 time.Duration `json:"max_p95,omitempty"`
}

// WithDefaults returns h with its zero fields set to their defaults.
func (h Health) WithDefaults() Health {
	if h.Windows == 0 {
		h.Windows = 3
	}
	if h.MaxFailures == 0 {
		h.MaxFailures = 0.01
	}
	return h
}

// String describes the rule: "3 windows in a row with ≤1% failed, half
// answered".
func (h Health) String() string {
	s := fmt.Sprintf("%d windows in a row with ≤%g%% failed and at least half of the offered answered", h.Windows, h.MaxFailures*100)
	if h.MaxP95 > 0 {
		s += fmt.Sprintf(", p95 ≤ %v", h.MaxP95)
	}
	return s
}

// FaultResult is what a fault injected during a step's hold did: when it
// was applied and cleared, when the load first saw it, and when the
// system recovered, read from the step's timeline windows.
type FaultResult struct {
	// Name is the fault's, e.g. "postgres paused 3s".
	Name string `json:"name"`
	// At and For are the planned offset into the hold and duration.
	At  time.Duration `json:"at"`
	For time.Duration `json:"for,omitempty"`
	// Injected and Cleared are when it was applied and undone; zero when
	// not (a fault without a clear, a run interrupted before it).
	Injected time.Time `json:"injected,omitzero"`
	Cleared  time.Time `json:"cleared,omitzero"`
	// Error is why applying or clearing it failed; the step is then
	// invalid: it did not measure the fault planned.
	Error string `json:"error,omitempty"`
	// Healthy is the rule the windows were judged by.
	Healthy Health `json:"healthy"`
	// Detected says the load saw it: a window from the injection on was
	// unhealthy. DetectedAfter is from the injection to that window's
	// end: how soon the load noticed (within a window).
	Detected      bool          `json:"detected"`
	DetectedAfter time.Duration `json:"detected_after,omitempty"`
	// RecoveredAfter is from the clear (the injection, for a fault that is
	// not cleared, such as a kill) to the start of the first run of
	// Healthy.Windows healthy windows: how long the system took to serve
	// again as before. Unrecovered says no such run came before the hold
	// ended.
	RecoveredAfter time.Duration `json:"recovered_after,omitempty"`
	Unrecovered    bool          `json:"unrecovered,omitempty"`
	// Answered, Failed and TimedOut count the requests that ended from
	// the injection to the recovery (to the hold's end when there was
	// none); TimedOut is of Failed.
	Answered int64 `json:"answered"`
	Failed   int64 `json:"failed"`
	TimedOut int64 `json:"timed_out,omitempty"`
}

// Applied says the fault was injected without error.
func (f FaultResult) Applied() bool { return !f.Injected.IsZero() && f.Error == "" }

// Seen describes when the load saw the fault: "after 1.2s", or "not seen".
func (f FaultResult) Seen() string {
	switch {
	case !f.Applied():
		return "not applied"
	case !f.Detected:
		return "not seen"
	}
	return "after " + roundFault(f.DetectedAfter).String()
}

// Recovery describes the recovery: "after 850ms", "not by the hold's end".
func (f FaultResult) Recovery() string {
	switch {
	case !f.Applied():
		return "—"
	case f.Unrecovered:
		return "not by the hold's end"
	}
	return "after " + roundFault(f.RecoveredAfter).String()
}

// FailedText describes the failures: "21 (21 timed out) of 80".
func (f FaultResult) FailedText() string {
	if f.TimedOut > 0 {
		return fmt.Sprintf("%d (%d timed out) of %d", f.Failed, f.TimedOut, f.Answered)
	}
	return fmt.Sprintf("%d of %d", f.Failed, f.Answered)
}

// String is one line: "postgres paused 3s at 3s: seen after 1s, recovered
// after 850ms; 21 (21 timed out) of 80 failed".
func (f FaultResult) String() string {
	if f.Error != "" {
		return fmt.Sprintf("%s at %v: %s", f.Name, f.At, f.Error)
	}
	if !f.Applied() {
		return fmt.Sprintf("%s at %v: not applied", f.Name, f.At)
	}
	rec := "recovered " + f.Recovery()
	if f.Unrecovered {
		rec = "not recovered by the hold's end"
	}
	seen := "seen " + f.Seen()
	if !f.Detected {
		seen = "not seen"
	}
	return fmt.Sprintf("%s at %v: %s, %s; %s failed", f.Name, f.At, seen, rec, f.FailedText())
}

func roundFault(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(10 * time.Millisecond)
}

// faultsSection is the report's table of the faults injected: when each
// was applied and for how long, when the load saw it, when the system
// recovered, and what failed meanwhile.
func faultsSection(p func(string, ...any), steps []*StepResult) {
	var rule string
	for _, s := range steps {
		for _, f := range s.Faults {
			if rule == "" {
				rule = f.Healthy.String()
			}
		}
	}
	if rule == "" {
		return
	}
	p("\n## Faults\n\n| Step | Fault | At | For | Seen | Recovered | Failed meanwhile |\n|---:|---|---:|---:|---|---|---|\n")
	for _, s := range steps {
		for _, f := range s.Faults {
			dur := "—"
			if f.For > 0 {
				dur = f.For.String()
			}
			seen, rec := f.Seen(), f.Recovery()
			if f.Error != "" {
				seen, rec = cell(f.Error), "—"
			}
			p("| %d | %s | %v | %s | %s | %s | %s |\n", s.Index+1, cell(f.Name), f.At, dur, seen, rec, f.FailedText())
		}
	}
	p("\n%s\n", FaultsLegend(rule))
}

// FaultsLegend is the sentence under a faults table, with the health
// rule the windows were judged by (Health.String), for every report.
func FaultsLegend(rule string) string {
	return "Seen: the end of the first unhealthy window after the fault was applied. Recovered: from its clear (its application, for a fault not undone) to the start of " +
		rule + ". Failed meanwhile: the requests that ended from the fault to the recovery."
}
