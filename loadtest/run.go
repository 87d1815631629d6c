package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Scenario is one load test: a workload driven through a plan, with the
// checks every step must pass. Zero fields take the documented defaults.
type Scenario struct {
	// Name identifies the run in results, e.g. "TestLoad_Smoke/users=50".
	Name string
	// Workload generates the load: *Arrivals (open model) or *Users.
	Workload Workload
	// Plan decides the steps: a Ladder, or a Knee search.
	Plan Plan
	// Checks are evaluated on every step; all violations are collected.
	Checks []Check
	// Seed makes every random choice of the run reproducible; default 1.
	Seed uint64
	// SelfCheck sets when a step is invalid because the generator, not
	// the target, was the bottleneck.
	SelfCheck SelfCheck
	// Samplers are measured every SampleEvery; each step reports the mean
	// and max of every series during its hold. The generator's own CPU
	// and memory are always sampled.
	Samplers []Sampler
	// SampleEvery is the sampling interval; default 5 s.
	SampleEvery time.Duration
	// SeriesEvery is the window of the run's Timeline (per-window rates,
	// latency percentiles and errors, kept in the result); default 1 s,
	// negative keeps no timeline.
	SeriesEvery time.Duration
	// ProgressEvery is the interval of the one-line progress report to
	// Logf; default 5 s.
	ProgressEvery time.Duration
	// Drain is how long a step waits after its hold for the requests sent
	// during the hold to be answered; default 30 s. Requests still
	// unanswered then are counted as timeouts.
	Drain time.Duration
	// Logf receives progress lines, e.g. t.Logf; nil discards them.
	Logf func(format string, args ...any)
	// Params records the scenario's knobs in the result (USERS, DURATION,
	// the workload model's parameters); values are free text.
	Params map[string]string
	// System describes the system under test for the result's environment
	// fingerprint: backend, limits, component versions and image digests.
	System System
	// Recorder, when set, is the run's recorder: hand it to whatever
	// records outside the workload — streams the scenario holds open (as
	// sse.Config.Sink), callbacks of the open model's requests — so that
	// their samples land in the run's steps; the kinds it was made with
	// (NewRecorder("fanout")) may be checked. Nil means a new one.
	Recorder *Recorder
	// OnStep, when set, is called after every step with the result so far
	// (marked partial), from the run's goroutine: [Test] writes it to disk
	// so a killed run keeps its finished steps.
	OnStep func(*Result)
	// Profiles are components that serve net/http/pprof. During every
	// hold the run takes a CPU profile (ending with the hold, up to 30 s)
	// and, at its end, heap and goroutine profiles of each, into
	// ProfileDir; it keeps the first failing step's (Test: LOAD_PROFILE).
	Profiles []ProfileSource
	// ProfileDir is where profiles are written; "" takes none. Test sets
	// it beside the result (<result>.profiles).
	ProfileDir string
	// ProfileEvery keeps every hold's profiles, not only the first failing
	// step's.
	ProfileEvery bool
	// Analyze, when set, derives findings from the finished run — a cost
	// per unit fitted over the steps, a ratio between kinds — which the
	// result and its report carry in Findings. An error is a finding too,
	// named as such; the verdict is the checks'.
	Analyze func(*Result) ([]Finding, error)
}

// SelfCheck holds the bounds beyond which the generator is considered the
// bottleneck and a step is invalid. Zero fields take the defaults; a
// negative field disables that check.
type SelfCheck struct {
	// MaxScheduleLag bounds the p99 of how late requests were started
	// relative to plan; default 50 ms.
	MaxScheduleLag time.Duration
	// MaxCPU bounds the generator process's CPU as a fraction of
	// GOMAXPROCS cores; default 0.9.
	MaxCPU float64
	// MaxQueueWait bounds the p99 of how long requests waited inside the
	// generator before they could be sent (Response.Queued: a connection
	// of a client's pool); default 10 ms.
	MaxQueueWait time.Duration
	// MaxMemory bounds the generator's resident memory as a fraction of
	// its limit (its cgroup's, GOMEMLIMIT, the host's); default 0.9.
	MaxMemory float64
	// MaxFiles bounds the generator's open file descriptors as a fraction
	// of its limit (RLIMIT_NOFILE); default 0.9.
	MaxFiles float64
}

func (c SelfCheck) withDefaults() SelfCheck {
	if c.MaxScheduleLag == 0 {
		c.MaxScheduleLag = 50 * time.Millisecond
	}
	if c.MaxCPU == 0 {
		c.MaxCPU = 0.9
	}
	if c.MaxQueueWait == 0 {
		c.MaxQueueWait = 10 * time.Millisecond
	}
	if c.MaxMemory == 0 {
		c.MaxMemory = 0.9
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = 0.9
	}
	return c
}

// reasons returns why the step's generator figures make it invalid.
func (c SelfCheck) reasons(sc SelfCheckResult) []string {
	var out []string
	if c.MaxScheduleLag > 0 && sc.ScheduleLagP99 > c.MaxScheduleLag {
		out = append(out, fmt.Sprintf("the generator started requests late: schedule lag p99 %v > %v", sc.ScheduleLagP99, c.MaxScheduleLag))
	}
	if c.MaxCPU > 0 && sc.CPU >= c.MaxCPU {
		out = append(out, fmt.Sprintf("the generator used %.0f%% of its %d cores (bound %.0f%%)", sc.CPU*100, runtime.GOMAXPROCS(0), c.MaxCPU*100))
	}
	if c.MaxQueueWait > 0 && sc.QueuedP99 > c.MaxQueueWait {
		out = append(out, fmt.Sprintf("requests waited inside the generator before they could be sent: p99 %v, up to %v (bound %v) — a client's connection pool is smaller than the load needs: raise httpc.Options.MaxConnsPerHost",
			sc.QueuedP99.Round(time.Microsecond), sc.QueuedMax.Round(time.Millisecond), c.MaxQueueWait))
	}
	if c.MaxMemory > 0 && sc.MemoryLimit > 0 && float64(sc.Memory) >= c.MaxMemory*float64(sc.MemoryLimit) {
		out = append(out, fmt.Sprintf("the generator's memory reached %s of its %s limit (bound %.0f%%)", formatBytes(sc.Memory), formatBytes(sc.MemoryLimit), c.MaxMemory*100))
	}
	if c.MaxFiles > 0 && sc.FileLimit > 0 && float64(sc.Files) >= c.MaxFiles*float64(sc.FileLimit) {
		out = append(out, fmt.Sprintf("the generator held %d open descriptors of its limit of %d (bound %.0f%%): hold fewer streams per process or run the target elsewhere", sc.Files, sc.FileLimit, c.MaxFiles*100))
	}
	return out
}

// Validate reports every problem of the scenario that can be found before
// anything runs, each naming the field and the fix.
func (s *Scenario) Validate() error {
	var errs []error
	if s.Workload == nil {
		errs = append(errs, errors.New("scenario: Workload is nil; give &loadtest.Arrivals{...} or &loadtest.Users{...}"))
	} else {
		errs = append(errs, s.Workload.Validate())
	}
	if s.Plan == nil {
		errs = append(errs, errors.New("scenario: Plan is nil; give a loadtest.Ladder or loadtest.Knee"))
	} else {
		errs = append(errs, s.Plan.Validate())
	}
	var kinds []string
	if s.Workload != nil {
		kinds = s.Workload.KindNames()
	}
	if s.Recorder != nil {
		kinds = append(kinds, s.Recorder.Kinds()...)
	}
	for i, c := range s.Checks {
		if c == nil {
			errs = append(errs, fmt.Errorf("scenario: Checks[%d] is nil", i))
			continue
		}
		errs = append(errs, c.Validate(kinds))
	}
	for name, d := range map[string]time.Duration{"SampleEvery": s.SampleEvery, "ProgressEvery": s.ProgressEvery, "Drain": s.Drain} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("scenario: %s is %v; give a duration >= 0 (0 for the default)", name, d))
		}
	}
	for i, p := range s.Profiles {
		if u, err := url.Parse(p.URL); p.Component == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("scenario: Profiles[%d] is {%q, %q}; give the component's name and the http:// base URL of its pprof handlers, such as http://127.0.0.1:8080/debug/pprof", i, p.Component, p.URL))
		}
	}
	if math.IsNaN(s.SelfCheck.MaxCPU) || math.IsNaN(s.SelfCheck.MaxMemory) || math.IsNaN(s.SelfCheck.MaxFiles) {
		errs = append(errs, errors.New("scenario: a SelfCheck bound is NaN"))
	}
	if s.Workload != nil && s.Plan != nil {
		errs = append(errs, fitsLimiters(s.Workload, s.Plan))
	}
	return errors.Join(errs...)
}

// Run validates the scenario and runs it: for each step of the plan it
// ramps the workload, measures the hold, waits for the hold's requests,
// checks the generator and evaluates every check. It returns an error
// before anything runs when the scenario is malformed.
//
// Once the run has started the result is never nil. When ctx is cancelled
// (an interrupt, the test's deadline) the run stops cleanly, keeps what it
// measured, marks the result partial and returns ctx's error with it. A
// violated check is not an error of Run: see [Result.Err].
func Run(ctx context.Context, s Scenario) (*Result, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.SampleEvery == 0 {
		s.SampleEvery = 5 * time.Second
	}
	if s.ProgressEvery == 0 {
		s.ProgressEvery = 5 * time.Second
	}
	if s.SeriesEvery == 0 {
		s.SeriesEvery = time.Second
	}
	if s.Drain == 0 {
		s.Drain = 30 * time.Second
	}
	if s.Logf == nil {
		s.Logf = func(string, ...any) {}
	}
	var logMu sync.Mutex // the run logs from several goroutines; Logf need not be safe for that
	logf := s.Logf
	s.Logf = func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logf(format, args...)
	}
	s.SelfCheck = s.SelfCheck.withDefaults()

	rec := s.Recorder
	if rec == nil {
		rec = NewRecorder()
	}
	for _, k := range s.Workload.KindNames() {
		rec.kind(k)
	}
	r := &runner{s: s, rec: rec}
	r.res = &Result{
		Schema: SchemaVersion, Scenario: s.Name, Model: modelOf(s.Workload),
		Plan: describePlan(s.Plan), Params: s.Params, Seed: s.Seed, Start: time.Now(),
		Environment: s.System.fingerprint(), Provenance: provenance(),
	}
	r.timeline = newTimelineLog(r.res.Start, s.SeriesEvery)
	for _, c := range s.Checks {
		r.res.Checks = append(r.res.Checks, c.String())
	}
	err := r.run(ctx)
	r.res.End = time.Now()
	r.res.Timeline = r.timelineNow()
	r.res.summarise()
	if c, ok := s.Plan.(interface{ Conclude([]*StepResult) string }); ok {
		r.res.Conclusion = c.Conclude(r.res.Steps)
	}
	if s.Analyze != nil && len(r.res.Steps) > 0 {
		fs, aerr := s.Analyze(r.res)
		r.res.Findings = fs
		if aerr != nil {
			r.res.Findings = append(r.res.Findings, Finding{Name: "analysis failed", Text: aerr.Error()})
		}
	}
	if r.res.Partial {
		r.res.Conclusion = "interrupted: " + context.Cause(ctx).Error() + "; the result holds what was measured until then"
	}
	return r.res, err
}

type runner struct {
	s   Scenario
	rec *Recorder
	res *Result

	samples *sampleLog

	mu       sync.Mutex // guards timeline
	timeline *timelineLog
}

func (r *runner) run(ctx context.Context) error {
	drv := r.s.Workload.Start(ctx, r.rec, r.s.Seed)
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	var bgWG sync.WaitGroup
	r.samples = newSampleLog(append([]Sampler{newProcessSampler()}, r.s.Samplers...), r.s.Logf)
	prof := newProfiler(r.s)
	bgWG.Add(2)
	go func() { defer bgWG.Done(); r.samples.loop(bg, r.s.SampleEvery) }()
	go func() { defer bgWG.Done(); r.watch(bg, drv) }()
	defer func() {
		drv.Stop()
		stopBG()
		bgWG.Wait()
	}()

	level := 0.0
	for i := 0; ; i++ {
		step, ok := r.s.Plan.Next(r.res.Steps)
		if !ok {
			return nil
		}
		if step.FromZero && level > 0 {
			r.setPhase(i, "zero", 0)
			drv.Ramp(0, 0)
			r.quiesce(ctx, drv)
			level = 0
		}
		r.setPhase(i, "ramp", step.Level)
		drv.Ramp(step.Level, step.Ramp)
		level = step.Level
		if !sleep(ctx, step.Ramp) {
			r.res.Partial = true
			return ctx.Err()
		}

		// A sample just before the hold closes the ramp's interval, so that
		// rates sampled within [start, end] cover the hold only; it is
		// stamped before the hold and taken in the background, as samplers
		// may be slow (container stats).
		pre := time.Now()
		go r.samples.sampleAt(bg, pre)
		w := r.rec.open()
		r.setPhase(i, "hold", step.Level)
		start, cpu0 := time.Now(), processCPU()
		profiles := prof.start(ctx, i, step.Hold)
		completed := sleep(ctx, step.Hold)
		end, cpu1 := time.Now(), processCPU()
		r.rec.close(w)
		r.samples.sampleAt(bg, end)

		r.setPhase(i, "drain", step.Level)
		profiles.end(ctx)
		sr := r.finalize(ctx, i, step, w, start, end, cpu1-cpu0)
		if !completed {
			sr.Verdict = Incomplete
		}
		profiles.keep(sr)
		r.res.Steps = append(r.res.Steps, sr)
		r.s.Logf("%s", sr)
		for _, v := range sr.Violations {
			r.s.Logf("  violated: %s", v)
		}
		for _, v := range sr.invalidReasons() {
			r.s.Logf("  invalid: %s", v)
		}
		for _, v := range sr.Saturated {
			r.s.Logf("  near its limit: %s", v)
		}
		if r.s.OnStep != nil {
			r.s.OnStep(r.snapshot())
		}
		if !completed {
			r.res.Partial = true
			return ctx.Err()
		}
	}
}

// quiesce waits (up to Drain) until nothing is in flight.
func (r *runner) quiesce(ctx context.Context, drv Driver) {
	deadline := time.Now().Add(r.s.Drain)
	for drv.InFlight() > 0 && time.Now().Before(deadline) && sleep(ctx, 10*time.Millisecond) {
	}
}

// finalize waits for the hold's requests and turns the window into a
// StepResult with its verdict.
func (r *runner) finalize(ctx context.Context, i int, step Step, w *window, start, end time.Time, cpu time.Duration) *StepResult {
	deadline := time.Now().Add(r.s.Drain)
	for w.inFlight() > 0 && time.Now().Before(deadline) && sleep(ctx, 10*time.Millisecond) {
	}
	sr := &StepResult{Index: i, Step: step, Start: start, End: end}
	names := r.rec.Kinds()
	var answered, ok int64
	for k, name := range names {
		ks := w.stats(k)
		kr := newKindResult(name, ks)
		if n := ks.inflight.Load(); n > 0 {
			kr.Outcomes[Timeout] += n
			if !kr.Observed {
				sr.Self.Unfinished += n
			}
		}
		sr.Kinds = append(sr.Kinds, kr)
		if !kr.Observed {
			answered += kr.Total() - kr.Outcomes[Dropped]
			ok += kr.Outcomes[OK]
		}
	}
	secs := end.Sub(start).Seconds()
	if secs > 0 {
		sr.Offered = float64(w.scheduled.Load()) / secs
		sr.Achieved = float64(answered) / secs
		sr.Throughput = float64(ok) / secs
	}

	// The generator's check on itself.
	w.mu.Lock()
	lag := time.Duration(w.lag.ValueAtPercentile(99)) * time.Microsecond
	w.mu.Unlock()
	sr.Self.ScheduleLagP99 = lag
	sr.Self.QueuedP99, sr.Self.QueuedMax = w.queued()
	sr.Self.Dropped = sr.Count(Dropped)
	if secs > 0 {
		sr.Self.CPU = cpu.Seconds() / secs / float64(runtime.GOMAXPROCS(0))
	}
	sr.Resources = r.samples.summary(start, end)
	if m := sr.Resource("generator", "memory"); m != nil {
		sr.Self.Memory, sr.Self.MemoryLimit = int64(m.Max), int64(m.Limit)
	}
	if f := sr.Resource("generator", "files"); f != nil {
		sr.Self.Files, sr.Self.FileLimit = int64(f.Max), int64(f.Limit)
	}
	sr.Self.Reasons = r.s.SelfCheck.reasons(sr.Self)
	sr.Self.Reasons = append(sr.Self.Reasons, r.samples.faultsIn(start, end)...)
	var harness []string
	sr.Saturated, harness = saturated(sr.Resources)
	for _, h := range harness {
		sr.Self.Reasons = append(sr.Self.Reasons, "the harness, not the target, is near its limit: "+h)
	}

	for _, c := range r.s.Checks {
		switch err := c.Evaluate(sr); {
		case err == nil:
		case errors.Is(err, ErrInsufficientData):
			sr.Unjudged = append(sr.Unjudged, err.Error())
		default:
			sr.Violations = append(sr.Violations, err.Error())
		}
	}
	switch {
	case len(sr.invalidReasons()) > 0:
		sr.Verdict = Invalid
	case len(sr.Violations) > 0:
		sr.Verdict = Fail
	default:
		sr.Verdict = Pass
	}
	return sr
}

// snapshot returns the result so far, for OnStep: the steps measured, marked
// partial and incomplete, so that a run killed after it reads as such.
func (r *runner) snapshot() *Result {
	c := *r.res
	c.Steps = slices.Clone(r.res.Steps)
	c.Timeline = r.timelineNow()
	c.End = time.Now()
	c.summarise()
	c.Partial, c.Verdict = true, Incomplete
	c.Conclusion = fmt.Sprintf("written after step %d while the run went on; a run that stops here was killed", len(c.Steps))
	return &c
}

// setPhase ends the current phase of the timeline and begins the next.
func (r *runner) setPhase(step int, name string, level float64) {
	r.mu.Lock()
	r.timeline.phase(time.Now(), step, name, level)
	r.mu.Unlock()
}

// timelineNow returns the timeline so far, nil when none is kept.
func (r *runner) timelineNow() *Timeline {
	if r.s.SeriesEvery <= 0 {
		return nil
	}
	points := r.samples.all()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.timeline.snapshot(time.Now(), points)
}

// watch closes a timeline window every SeriesEvery and logs one progress
// line every ProgressEvery: the phases it covered, offered and answered
// request rates, latency percentiles of the busiest request kind, errors
// and in flight, and the observed kinds (fan-out delays) apart.
func (r *runner) watch(ctx context.Context, drv Driver) {
	tick := r.s.SeriesEvery
	if tick <= 0 || tick > r.s.ProgressEvery {
		tick = r.s.ProgressEvery
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	start := r.timeline.tl.Start
	last, lastLine := start, start
	var acc liveWindow
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			w := r.rec.liveSnapshot()
			inFlight := drv.InFlight()
			r.mu.Lock()
			if r.s.SeriesEvery > 0 {
				r.timeline.add(now, now.Sub(last).Seconds(), w, inFlight)
			}
			last = now
			acc.merge(w)
			if now.Sub(lastLine) < r.s.ProgressEvery-tick/2 {
				r.mu.Unlock()
				continue
			}
			phase := r.timeline.covering(lastLine, now)
			r.mu.Unlock()
			r.s.Logf("%s", progressLine(phase, now.Sub(start), now.Sub(lastLine).Seconds(), acc, inFlight))
			lastLine, acc = now, liveWindow{}
		}
	}
}

// merge adds the window o to w.
func (w *liveWindow) merge(o liveWindow) {
	for i, name := range o.names {
		if i == len(w.names) {
			w.names = append(w.names, name)
			w.hists = append(w.hists, newHist())
			w.counts = append(w.counts, [NumOutcomes]int64{})
			w.begun = append(w.begun, 0)
			w.requests = append(w.requests, false)
		}
		w.hists[i].Merge(o.hists[i])
		for k, n := range o.counts[i] {
			w.counts[i][k] += n
		}
		w.begun[i] += o.begun[i]
		w.requests[i] = w.requests[i] || o.requests[i]
	}
}

// progressLine is one progress report over secs seconds: requests only in
// the rates, observed kinds (fan-out delays) reported apart.
func progressLine(phase string, elapsed time.Duration, secs float64, w liveWindow, inFlight int64) string {
	var begun, answered, dropped, errs int64
	busiest := -1
	var observed strings.Builder
	pct := func(h *hdrhistogram.Histogram, p float64) time.Duration {
		d := time.Duration(h.ValueAtPercentile(p)) * time.Microsecond
		switch { // three significant digits or so
		case d >= time.Second:
			return d.Round(10 * time.Millisecond)
		case d >= 10*time.Millisecond:
			return d.Round(100 * time.Microsecond)
		}
		return d.Round(time.Microsecond)
	}
	for i, c := range w.counts {
		var total int64
		for _, n := range c {
			total += n
		}
		if !w.requests[i] && w.begun[i] == 0 {
			if total > 0 {
				sep := ", "
				if observed.Len() == 0 {
					sep = " | observed: "
				}
				fmt.Fprintf(&observed, "%s%s %d", sep, w.names[i], total)
				if h := w.hists[i]; h.TotalCount() > 0 {
					fmt.Fprintf(&observed, " p95 %v", pct(h, 95))
				}
			}
			continue
		}
		begun += w.begun[i]
		answered += total - c[Dropped]
		dropped += c[Dropped]
		errs += total - c[OK] - c[Dropped]
		if busiest < 0 || w.hists[i].TotalCount() > w.hists[busiest].TotalCount() {
			busiest = i
		}
	}
	var lat string
	if busiest >= 0 && w.hists[busiest].TotalCount() > 0 {
		h := w.hists[busiest]
		lat = fmt.Sprintf(" | %s p50 %v p95 %v p99 %v", w.names[busiest], pct(h, 50), pct(h, 95), pct(h, 99))
	}
	if secs <= 0 {
		secs = 1
	}
	return fmt.Sprintf("%s [%v]: %.1f/s offered, %.1f/s answered%s | errors %d, dropped %d, in flight %d%s",
		phase, elapsed.Round(time.Second), float64(begun)/secs, float64(answered)/secs,
		lat, errs, dropped, inFlight, observed.String())
}

// sleep waits d or until ctx is done, and reports whether d elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
