package result

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/docker/go-units"

	"github.com/headroom-dev/headroom/internal/format"
)

// Verdict is how a step or a run ended.
type Verdict string

// The verdicts.
const (
	// Pass: every check held and the generator kept its schedule.
	Pass Verdict = "pass"
	// Fail: at least one check was violated.
	Fail Verdict = "fail"
	// Invalid: the step says nothing about the target: the generator was
	// the bottleneck (it missed its schedule, ran out of CPU, memory or
	// descriptors, or queued requests inside itself), or a check had too
	// little data to judge.
	Invalid Verdict = "invalid"
	// Incomplete: the run was interrupted before the step's hold ended, or
	// (for a whole result) it had not finished when the result was written.
	Incomplete Verdict = "incomplete"
)

// StepResult is what one step measured during its hold.
type StepResult struct {
	// Index is the step's position in the run, from 0.
	Index int `json:"index"`
	// Step is the step as planned.
	Step Step `json:"step"`
	// Start and End bound the hold, the only time measured.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Settle is how long the step waited, after its ramp and before its
	// hold, for the modeled users the ramp started to finish their
	// start-up work (User.Ready); Unsettled counts those still starting
	// when it gave up, at Scenario.Drain. A target that takes long to
	// admit its users shows it here. A shard of a sharded run keeps the
	// common schedule: it does not wait, and Unsettled counts its users
	// still starting when the hold began (summed by the merge).
	Settle    time.Duration `json:"settle,omitempty"`
	Unsettled int64         `json:"unsettled,omitempty"`
	// Drained is when the hold's requests had been answered (or given up
	// on) and the step was judged: what broke before then broke under the
	// step's load.
	Drained time.Time `json:"drained,omitzero"`
	// Offered is the load asked of the target in requests per second: the
	// arrivals scheduled (open model) or the requests users began.
	Offered float64 `json:"offered_per_s"`
	// Achieved is answered requests per second, any outcome but dropped;
	// observed kinds (fan-out delays) are not requests and not counted.
	Achieved float64 `json:"achieved_per_s"`
	// Throughput is successful (OK) answers per second.
	Throughput float64 `json:"throughput_per_s"`
	// Kinds holds the figures of every request kind, in the workload's order.
	Kinds []*KindResult `json:"kinds"`
	// Self is the generator's check on itself.
	Self SelfCheckResult `json:"self_check"`
	// Resources summarises every sampled series during the hold.
	Resources []SeriesSummary `json:"resources,omitempty"`
	// Verdict is pass, fail, invalid or incomplete.
	Verdict Verdict `json:"verdict"`
	// Violations lists every check the step broke.
	Violations []string `json:"violations,omitempty"`
	// Unjudged lists the checks the step measured too little to judge
	// (see ErrInsufficientData); any makes the step invalid.
	Unjudged []string `json:"unjudged,omitempty"`
	// Down is set when a component of the system under test stopped during
	// the step (a violation wrapping ErrSystemDown): the step failed. What
	// the harness saw after — the proxy of a container that died exiting,
	// users retrying, the generator late under their retries — is its
	// consequence, kept in Self.Reasons but voiding nothing.
	Down bool `json:"down,omitempty"`
	// Saturated lists the sampled resources that ran at or near their
	// limit during the hold, such as "relay memory: max 8.0 MiB of 8.0 MiB
	// (100%)": where a failing step's ceiling likely was.
	Saturated []string `json:"saturated,omitempty"`
	// Profiles lists the profiles taken from the target's components
	// during the hold (LOAD_PROFILE, or automatically for the first step
	// that failed).
	Profiles []Profile `json:"profiles,omitempty"`
	// Queries counts the statements the database ran during the hold, as
	// a loadtest.StatementSource (fixtures' PostgreSQL) counts them; nil
	// without one.
	Queries *Queries `json:"queries,omitempty"`
	// Growth is, for a soak step (Step.Soak), every component's memory and
	// every goroutines series fitted over the hold; see Growth.
	Growth []Growth `json:"growth,omitempty"`
	// Faults are the faults injected during the hold (loadtest.Fault):
	// when each was applied and cleared, seen, recovered from.
	Faults []FaultResult `json:"faults,omitempty"`

	all *KindResult // AllRequests, merged on first use
}

// Latency histograms count microseconds from HistogramMin (1 µs) to
// HistogramMax (1 h) at HistogramDigits significant digits; a latency
// outside is clamped.
const (
	HistogramMin    = 1
	HistogramMax    = int64(time.Hour / time.Microsecond)
	HistogramDigits = 3
	// ErrorSamples is how many distinct error texts a kind keeps.
	ErrorSamples = 5
)

// NewHistogram returns an empty latency histogram of the range every
// KindResult keeps, so that histograms of several results add exactly.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(HistogramMin, HistogramMax, HistogramDigits)
}

// AllRequests names the figures of every request kind of a step taken
// together — their outcomes summed, their latency histograms merged — as
// published tables give "response times overall". Observed kinds (fan-out
// delays, stream events) are not requests and are left out. Kind returns
// it, checks may name it (LatencyBelow(AllRequests, 95, 300*time.Millisecond)),
// and Scenario.Headline may make it the report's latency columns.
const AllRequests = "all requests"

// Statement is one normalized statement a database ran, as PostgreSQL's
// pg_stat_statements counts it (constants replaced by $1, $2, …): its
// counts since the database started, or a hold's (their difference).
type Statement struct {
	// ID is the database's identifier of the normalized statement.
	ID int64 `json:"id"`
	// Query is the statement's normalized text.
	Query string `json:"query"`
	// Calls counts its executions; Rows the rows they returned or changed.
	Calls int64 `json:"calls"`
	Rows  int64 `json:"rows"`
	// TotalMS is the time spent executing it, every call together, in
	// milliseconds (the server's time, not the client's round trips).
	TotalMS float64 `json:"total_ms"`
}

// MeanMS is the mean execution time of one call, in milliseconds.
func (s Statement) MeanMS() float64 {
	if s.Calls <= 0 {
		return 0
	}
	return s.TotalMS / float64(s.Calls)
}

// TopStatements is how many statements a hold keeps, the busiest by
// total time.
const TopStatements = 10

// Queries is what the database ran during a hold: every statement taken
// together, per successful request, and the busiest statements.
type Queries struct {
	// Calls counts every statement executed; Statements how many distinct
	// normalized statements they were.
	Calls      int64 `json:"calls"`
	Statements int   `json:"statements"`
	// TotalMS is the execution time of them all, in milliseconds.
	TotalMS float64 `json:"total_ms"`
	// OK counts the hold's successful requests (every request kind
	// together; observed kinds are not requests), and PerOK is Calls per
	// one of them, 0 without any: a request that runs N queries reads as
	// N when it is the only kind.
	OK    int64   `json:"ok"`
	PerOK float64 `json:"per_ok"`
	// Top is the busiest statements by total time, at most TopStatements.
	Top []Statement `json:"top,omitempty"`
}

// HoldQueries is the difference of two readings of a database's
// statements, at a hold's start and end, with ok successful requests in
// the hold: statements matched by ID, those not run in between left out.
// A counter that went back (the database restarted, or its statistics
// were reset) counts from zero.
func HoldQueries(before, after []Statement, ok int64) *Queries {
	prev := make(map[int64]Statement, len(before))
	for _, s := range before {
		p := prev[s.ID] // one ID may come in several rows (users): summed
		p.Calls, p.Rows, p.TotalMS = p.Calls+s.Calls, p.Rows+s.Rows, p.TotalMS+s.TotalMS
		prev[s.ID] = p
	}
	cur := map[int64]*Statement{}
	var order []int64
	for _, s := range after {
		c, ok := cur[s.ID]
		if !ok {
			c = &Statement{ID: s.ID, Query: s.Query}
			cur[s.ID] = c
			order = append(order, s.ID)
		}
		c.Calls, c.Rows, c.TotalMS = c.Calls+s.Calls, c.Rows+s.Rows, c.TotalMS+s.TotalMS
	}
	q := &Queries{OK: ok}
	var all []Statement
	for _, id := range order {
		c, p := *cur[id], prev[id]
		if c.Calls >= p.Calls {
			c.Calls, c.Rows, c.TotalMS = c.Calls-p.Calls, c.Rows-p.Rows, c.TotalMS-p.TotalMS
		}
		if c.Calls <= 0 {
			continue
		}
		c.Rows, c.TotalMS = max(0, c.Rows), max(0, c.TotalMS)
		q.Calls += c.Calls
		q.TotalMS += c.TotalMS
		all = append(all, c)
	}
	q.Statements = len(all)
	sort.SliceStable(all, func(i, j int) bool { return all[i].TotalMS > all[j].TotalMS })
	if len(all) > TopStatements {
		all = all[:TopStatements]
	}
	q.Top = all
	if ok > 0 {
		q.PerOK = float64(q.Calls) / float64(ok)
	}
	return q
}

// Profile is one profile file taken from a component during a step's hold.
type Profile struct {
	// Component is the component profiled: "relay".
	Component string `json:"component"`
	// Type is the profile's type: "cpu", "heap", "goroutine".
	Type string `json:"kind"`
	// Path is the file, relative to the result's JSON file's directory
	// when it lies below it.
	Path string `json:"path"`
}

// Kind returns the result of the named kind, or nil; AllRequests gives the
// request kinds taken together (nil when the step has no request kind).
func (s *StepResult) Kind(name string) *KindResult {
	if name == AllRequests {
		return s.allRequests()
	}
	for _, k := range s.Kinds {
		if k.Kind == name {
			return k
		}
	}
	return nil
}

// allRequests merges the step's request kinds into one KindResult, once.
func (s *StepResult) allRequests() *KindResult {
	if s.all != nil {
		return s.all
	}
	var all *KindResult
	for _, k := range s.Kinds {
		h := k.histogram()
		if k.Observed || (h == nil && k.Total() == 0) {
			continue
		}
		if all == nil {
			all = &KindResult{Kind: AllRequests, Outcomes: map[Outcome]int64{}, hist: NewHistogram()}
		}
		for o, c := range k.Outcomes {
			all.Outcomes[o] += c
		}
		all.Bytes += k.Bytes
		if h != nil {
			all.hist.Merge(h)
		}
		if len(all.Errors) < ErrorSamples {
			all.Errors = append(all.Errors, k.Errors[:min(len(k.Errors), ErrorSamples-len(all.Errors))]...)
		}
	}
	if all != nil {
		all.fill()
	}
	s.all = all
	return all
}

// Idle reports whether the step is an idle row: Level 0, the stack at
// rest with no requests (see loadtest.Ladder).
func (s *StepResult) Idle() bool { return s.Step.Level == 0 }

// LevelName is the step's level as tables print it: "1,000", or "idle".
func (s *StepResult) LevelName() string {
	if s.Idle() {
		return "idle"
	}
	return format.Level(s.Step.Level)
}

// Seconds returns the hold's length in seconds.
func (s *StepResult) Seconds() float64 { return s.End.Sub(s.Start).Seconds() }

// Count returns the number of requests of every kind that ended in o.
func (s *StepResult) Count(o Outcome) int64 {
	var n int64
	for _, k := range s.Kinds {
		n += k.Outcomes[o]
	}
	return n
}

// SelfCheckResult is the generator's health during a step.
type SelfCheckResult struct {
	// ScheduleLagP99 is the 99th percentile of how late the generator
	// started requests relative to their intended send time.
	ScheduleLagP99 time.Duration `json:"schedule_lag_p99"`
	// LateStarts counts the requests started later than the self-check's
	// MaxScheduleLag.
	LateStarts int64 `json:"late_starts,omitempty"`
	// CPU is the generator process's CPU use as a fraction of the cores it
	// may use (GOMAXPROCS): 0.5 is half of them.
	CPU float64 `json:"cpu"`
	// Dropped counts arrivals never sent because no worker was free.
	Dropped int64 `json:"dropped"`
	// Unfinished counts requests of the hold still unanswered when the step
	// stopped waiting for them; they are counted as timeouts.
	Unfinished int64 `json:"unfinished"`
	// QueuedP99 and QueuedMax are the 99th percentile and the maximum of
	// how long requests waited inside the generator before they could be
	// sent (Response.Queued), such as for a connection of a client's pool.
	QueuedP99 time.Duration `json:"queued_p99"`
	QueuedMax time.Duration `json:"queued_max"`
	// Backlog, when requests queued in the generator because the target
	// answered slowly — the time from send to answer itself beyond a
	// latency check's bound, or the target near a resource limit — says
	// so: that queue is the target's backlog, the latency the users saw,
	// and the step is judged by its checks, not voided as the harness's.
	Backlog string `json:"backlog,omitempty"`
	// Memory and Files are the most resident memory (bytes) and open file
	// descriptors the generator held during the hold, with their limits
	// (0 when unknown).
	Memory      int64 `json:"memory,omitempty"`
	MemoryLimit int64 `json:"memory_limit,omitempty"`
	Files       int64 `json:"files,omitempty"`
	FileLimit   int64 `json:"file_limit,omitempty"`
	// HostCores is the host's cores; HostSteal the cores its hypervisor
	// took during the hold (CPU steal), HostOther the cores busy with
	// anything but the run (the generator and every component sampled in
	// cores); 0 when the host was not measured (see SelfCheck.MaxHostSteal
	// and MaxHostOther).
	HostCores int     `json:"host_cores,omitempty"`
	HostSteal float64 `json:"host_steal,omitempty"`
	HostOther float64 `json:"host_other,omitempty"`
	// Trends test the load offered during the hold for a drift: all
	// requests first, then each request kind (see Trend and
	// SelfCheck.MaxDrift).
	Trends []Trend `json:"trends,omitempty"`
	// Reasons says why the generator or another part of the harness, not
	// the target, was the bottleneck: the SelfCheck's bounds, harness series
	// near their limits, harness faults reported by samplers (ErrHarness);
	// empty when the harness was healthy.
	Reasons []string `json:"reasons,omitempty"`
	// Doubts says why a breach in this step may be the machine's rather
	// than the target's: the host busy with other work, or its hypervisor
	// taking its cores (SelfCheck.MaxHostSteal, MaxHostOther). A doubt
	// voids a step that breached — the breach cannot be laid on the target
	// — but not one that passed: the target held its level with less of
	// the machine than it would have had.
	Doubts []string `json:"doubts,omitempty"`
}

// SeriesSummary summarises one sampled series over a step's hold.
type SeriesSummary struct {
	Component string  `json:"component"`
	Metric    string  `json:"metric"`
	Unit      string  `json:"unit"`
	Mean      float64 `json:"mean"`
	Max       float64 `json:"max"`
	Samples   int     `json:"samples"`
	// Limit is the series' bound in Unit, 0 when it has none.
	Limit float64 `json:"limit,omitempty"`
	// Harness marks a series of the test's own machinery (Measurement.Harness).
	Harness bool `json:"harness,omitempty"`
}

// ResourceCell is a component's CPU and memory during the step, as every
// table shows them — one meaning per column: CPU in mean cores, memory as
// the most held, each with its share of the component's limit where it
// has one: "0.76 cores (76% of 1) / 272MiB (53% of 512MiB)". A service
// run as replicas (series "relay-1", "relay-2" and no "relay") reads
// "0.31 + 0.29 cores / 40MiB + 41MiB". "–" stands for what was not
// sampled.
func (s *StepResult) ResourceCell(component string) string {
	names := []string{component}
	if s.Resource(component, "cpu") == nil && s.Resource(component, "memory") == nil {
		names = nil
		for i := 1; ; i++ {
			n := component + "-" + strconv.Itoa(i)
			if s.Resource(n, "cpu") == nil && s.Resource(n, "memory") == nil {
				break
			}
			names = append(names, n)
		}
		if len(names) == 0 {
			return "– / –"
		}
	}
	var cpus, mems []string
	cpuLimit, memLimit := 0.0, 0.0
	var cpuSum, memSum float64
	for _, n := range names {
		cpu, mem := "–", "–"
		if r := s.Resource(n, "cpu"); r != nil {
			cpu, cpuSum, cpuLimit = fmt.Sprintf("%.2f", r.Mean), cpuSum+r.Mean, cpuLimit+r.Limit
		}
		if r := s.Resource(n, "memory"); r != nil {
			mem, memSum, memLimit = units.BytesSize(r.Max), memSum+r.Max, memLimit+r.Limit
		}
		cpus, mems = append(cpus, cpu), append(mems, mem)
	}
	cpu, mem := strings.Join(cpus, " + "), strings.Join(mems, " + ")
	if cpu != "–" {
		cpu += " cores"
		if cpuLimit > 0 && len(names) == 1 {
			cpu += fmt.Sprintf(" (%.0f%% of %g)", cpuSum/cpuLimit*100, cpuLimit)
		}
	}
	if memLimit > 0 && len(names) == 1 && mem != "–" {
		mem += fmt.Sprintf(" (%.0f%% of %s)", memSum/memLimit*100, units.BytesSize(memLimit))
	}
	return cpu + " / " + mem
}

// Resource returns the summary of the series component/metric, or nil.
func (s *StepResult) Resource(component, metric string) *SeriesSummary {
	for i := range s.Resources {
		if r := &s.Resources[i]; r.Component == component && r.Metric == metric {
			return r
		}
	}
	return nil
}

// InvalidReasons returns why the step is invalid: the harness's reasons;
// when a check was violated, the doubts on the machine (the breach may be
// theirs); when none was, the checks it could not judge (a pass needs
// every check). A check it could not judge does not void a breach another
// check is sure of: a collapsing target answers too few requests for a
// p95, and that is its failure, not the harness's. None when the system
// under test went down (Down), whose breach they follow.
func (s *StepResult) InvalidReasons() []string {
	if s.Down {
		return nil
	}
	out := append([]string(nil), s.Self.Reasons...)
	if len(s.Violations) > 0 {
		return append(out, s.Self.Doubts...)
	}
	return append(out, s.Unjudged...)
}

// Latencies are a kind's latency percentiles.
type Latencies struct {
	P50  time.Duration `json:"p50"`
	P90  time.Duration `json:"p90"`
	P95  time.Duration `json:"p95"`
	P99  time.Duration `json:"p99"`
	P999 time.Duration `json:"p99_9"`
	Max  time.Duration `json:"max"`
	Mean time.Duration `json:"mean"`
}

// KindResult is one request kind's figures in one step.
type KindResult struct {
	// Kind is the kind's name, e.g. "tools/call".
	Kind string `json:"kind"`
	// Outcomes counts requests by outcome; zero counts are left out.
	Outcomes map[Outcome]int64 `json:"outcomes"`
	// Bytes is the total received.
	Bytes int64 `json:"bytes"`
	// Latency holds percentiles from the intended send time, over every
	// answered request (all outcomes but dropped).
	Latency Latencies `json:"latency"`
	// Errors keeps a few distinct error texts as samples.
	Errors []string `json:"errors,omitempty"`
	// Observed marks a kind of samples observed rather than requested
	// (fan-out delays, stream events): it counts in no request rate.
	Observed bool `json:"observed,omitempty"`
	// Histogram is the latency histogram (microseconds) in HdrHistogram's
	// compressed V2 encoding (base64), so results can be merged and
	// re-analysed.
	Histogram string `json:"histogram,omitempty"`

	hist *hdrhistogram.Histogram
}

// Total returns the number of requests of every outcome.
func (k *KindResult) Total() int64 {
	var n int64
	for _, c := range k.Outcomes {
		n += c
	}
	return n
}

// Rate returns the fraction of requests that ended in o, 0 when there were
// none.
func (k *KindResult) Rate(o Outcome) float64 {
	t := k.Total()
	if t == 0 {
		return 0
	}
	return float64(k.Outcomes[o]) / float64(t)
}

// Percentile returns the latency at percentile p (0 < p <= 100).
func (k *KindResult) Percentile(p float64) time.Duration {
	h := k.histogram()
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.ValueAtPercentile(p)) * time.Microsecond
}

// PercentileBounds returns a confidence interval for the latency at
// percentile p, z standard errors wide: the values at the ranks p ±
// z·sqrt(p(1-p)/n) of the n samples (distribution-free, from the binomial
// law of the count below a quantile). With few samples or a long tail the
// interval is wide, which is what a comparison must allow for.
func (k *KindResult) PercentileBounds(p, z float64) (lo, hi time.Duration) {
	n := float64(k.Answered())
	if n == 0 {
		return 0, 0
	}
	q := p / 100
	d := z * math.Sqrt(q*(1-q)/n) * 100
	return k.Percentile(math.Max(p-d, 0)), k.Percentile(math.Min(p+d, 100))
}

// Answered returns the number of latency samples (requests not dropped).
func (k *KindResult) Answered() int64 {
	if h := k.histogram(); h != nil {
		return h.TotalCount()
	}
	return 0
}

func (k *KindResult) histogram() *hdrhistogram.Histogram {
	if k.hist == nil && k.Histogram != "" {
		if h, err := hdrhistogram.Decode([]byte(k.Histogram)); err == nil {
			k.hist = h
		}
	}
	return k.hist
}

// MergeKinds adds the figures of one request kind measured by several
// generators into one exactly: outcome counts and bytes summed, latency
// histograms added (so every percentile is that of all the samples
// together), error samples pooled.
func MergeKinds(parts ...*KindResult) (*KindResult, error) {
	if len(parts) == 0 {
		return nil, errors.New("loadtest: no kind results to merge")
	}
	out := &KindResult{Kind: parts[0].Kind, Outcomes: map[Outcome]int64{}, hist: NewHistogram()}
	for _, p := range parts {
		if p.Kind != out.Kind {
			return nil, fmt.Errorf("loadtest: merging kind %q with kind %q", out.Kind, p.Kind)
		}
		for o, n := range p.Outcomes {
			out.Outcomes[o] += n
		}
		out.Bytes += p.Bytes
		out.Observed = out.Observed || p.Observed
		for _, e := range p.Errors {
			if len(out.Errors) < ErrorSamples && !slices.Contains(out.Errors, e) {
				out.Errors = append(out.Errors, e)
			}
		}
		if p.Histogram == "" {
			continue
		}
		h, err := hdrhistogram.Decode([]byte(p.Histogram))
		if err != nil {
			return nil, fmt.Errorf("loadtest: kind %q: histogram: %w", p.Kind, err)
		}
		if dropped := out.hist.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("loadtest: kind %q: %d samples outside the histogram's range", p.Kind, dropped)
		}
	}
	out.fill()
	return out, nil
}

// NewKindResult returns the figures of the kind name with no outcome
// counted yet and latencies from h, a histogram of NewHistogram's range
// that the result keeps (pass a copy of one still recording).
func NewKindResult(name string, h *hdrhistogram.Histogram) *KindResult {
	k := &KindResult{Kind: name, Outcomes: map[Outcome]int64{}, hist: h}
	k.fill()
	return k
}

// fill computes Latency and Histogram from the histogram.
func (k *KindResult) fill() {
	h := k.hist
	us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
	if h.TotalCount() > 0 {
		k.Latency = Latencies{
			P50: us(h.ValueAtPercentile(50)), P90: us(h.ValueAtPercentile(90)),
			P95: us(h.ValueAtPercentile(95)), P99: us(h.ValueAtPercentile(99)),
			P999: us(h.ValueAtPercentile(99.9)), Max: us(h.Max()),
			Mean: time.Duration(h.Mean() * float64(time.Microsecond)),
		}
	}
	if b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase); err == nil {
		k.Histogram = string(b)
	}
}

// String returns a one-line summary, for logs.
func (s *StepResult) String() string {
	return fmt.Sprintf("step %d (level %g): %s, %.1f ok/s of %.1f offered/s", s.Index+1, s.Step.Level, s.Verdict, s.Throughput, s.Offered)
}

// Step is one load level of a plan: the workload ramps from the previous
// level to Level over Ramp, then holds it for Hold while the step is
// measured. Level is arrivals per second for loadtest.Arrivals and concurrent users
// for loadtest.Users.
type Step struct {
	// Level is the load to reach: arrivals/s or users; > 0, or 0 for a
	// ladder's idle row (the stack at rest: no requests).
	Level float64
	// Ramp is how long the change from the previous level takes; 0 jumps.
	Ramp time.Duration
	// Hold is how long the level is held and measured; must be > 0.
	Hold time.Duration
	// FromZero makes the step start from no load: the workload is brought
	// to zero and its requests drained before the ramp, each given up to
	// Scenario.Drain from the stop, of which the ramp counts (a request
	// still in flight when the ramp begins ends before the hold does).
	// Knee probes use it so that every probe is independent of the one
	// before.
	FromZero bool
	// Soak fits, over the hold, every component's memory and every
	// goroutines series (see Growth), and fails the step on a leak of the
	// target or a service of the system that the fit is sure of. A soak
	// holds one level for a long time: loadtest.Soak builds one.
	Soak bool `json:",omitempty"`
	// LeakMatters is, on a soak, the slowest memory growth that is a
	// leak, in bytes per hour: growth the fit is not sure is at least
	// this fast is not one. 0 counts any sure growth past Growth's floors.
	// A soak of minutes cannot tell a slow leak from a heap still finding
	// its size (pools and buffers growing to the busiest moment so far);
	// saying what matters keeps it to the leaks it can tell.
	LeakMatters float64 `json:",omitempty"`
}
