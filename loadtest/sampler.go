package loadtest

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// Measurement is one value of one series at one instant, such as the CPU of
// the relay container in cores or PostgreSQL's active connections.
type Measurement struct {
	// Component is what was measured: "relay", "postgres", "generator".
	Component string
	// Metric names the series within the component: "cpu", "memory",
	// "connections_active".
	Metric string
	// Unit is the unit of Value: "cores", "bytes", "count".
	Unit string
	// Value is the measured value in Unit.
	Value float64
	// Limit is the series' bound in Unit when it has one — a container's
	// CPU quota or memory limit, the process's descriptor limit — and 0
	// otherwise. A step reports the series that came near their limit.
	Limit float64
	// Harness marks a series of the test's own machinery, not of the
	// system under test — Docker's userland proxy of a published port, a
	// load balancer of the harness. Near its limit, it makes the step
	// invalid rather than a breach. (The generator's own series are judged
	// by the SelfCheck.)
	Harness bool
}

// Sampler is anything measured periodically into named series: container
// CPU and memory, database connections, the generator's own process. A run
// calls Sample every sampling interval (5 s by default) from one goroutine
// and attaches each step's summary (mean and max per series) to its result.
type Sampler interface {
	// Sample returns the current value of every series the sampler
	// measures. Rates (CPU) are averaged since the previous call. An error
	// is logged once per step and does not stop the run.
	Sample(ctx context.Context, now time.Time) ([]Measurement, error)
}

// StatementSource is a sampler that also counts the statements a database
// runs: fixtures' PostgreSQL sampler reads pg_stat_statements. A run reads
// the first of its samplers that is one at the start and at the end of
// every hold, and the step keeps the difference (StepResult.Queries: every
// statement together, per successful request, and the busiest). A sharded
// run leaves it out: each shard would count the whole database's.
type StatementSource interface {
	// Statements returns every normalized statement the database has run,
	// with its counts so far.
	Statements(ctx context.Context) ([]result.Statement, error)
}

// sampleLog collects the measurements of a run's samplers over time.
type sampleLog struct {
	samplers []Sampler
	logf     func(string, ...any)

	mu     sync.Mutex // guards the fields below; serialises sampling
	points []timedMeasurement
	faults []timedFault
	warned map[int]bool
	last   time.Time               // when the samplers were last measured
	prev   map[[2]string]time.Time // last sample of each series
}

// timedMeasurement is one sample and the interval it covers: since the
// series' previous sample.
type timedMeasurement struct {
	at    time.Time
	since time.Duration
	m     Measurement
}

// timedFault is a harness fault a sampler reported at a sampling.
type timedFault struct {
	at  time.Time
	msg string
}

// minSampleGap is the shortest interval between two samplings: a rate over
// a shorter interval is mostly noise.
const minSampleGap = 500 * time.Millisecond

func newSampleLog(s []Sampler, logf func(string, ...any)) *sampleLog {
	return &sampleLog{samplers: s, logf: logf, warned: map[int]bool{}, prev: map[[2]string]time.Time{}}
}

func (l *sampleLog) loop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	l.sampleAt(ctx, time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			l.sampleAt(ctx, now)
		}
	}
}

// sampleAt measures every sampler once, all at the same time, and stamps
// the measurements with at; it does nothing when the samplers were measured
// less than minSampleGap before at. A failing sampler is logged once and
// what it did measure is kept; its harness faults (ErrHarness) are kept
// for the steps they spoil.
func (l *sampleLog) sampleAt(ctx context.Context, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at.Sub(l.last) < minSampleGap {
		return
	}
	l.last = at
	results := make([][]Measurement, len(l.samplers))
	errs := make([]error, len(l.samplers))
	var wg sync.WaitGroup
	for i, s := range l.samplers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.Sample(ctx, at)
		}()
	}
	wg.Wait()
	for i, ms := range results {
		if err := errs[i]; err != nil {
			if errors.Is(err, ErrHarness) && ctx.Err() == nil {
				l.faults = append(l.faults, timedFault{at: at, msg: err.Error()})
			}
			if ctx.Err() == nil && !l.warned[i] {
				l.warned[i] = true
				l.logf("sampler %T: %v (further errors not shown)", l.samplers[i], err)
			}
		}
		now := at
		for _, m := range ms {
			key := [2]string{m.Component, m.Metric}
			since := time.Duration(0)
			if p, ok := l.prev[key]; ok {
				since = now.Sub(p)
			}
			l.prev[key] = now
			l.points = append(l.points, timedMeasurement{at: now, since: since, m: m})
		}
	}
}

// all returns every measurement so far.
func (l *sampleLog) all() []timedMeasurement {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.points)
}

// faultsIn returns the distinct harness faults reported within [from, to].
func (l *sampleLog) faultsIn(from, to time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, f := range l.faults {
		if !f.at.Before(from) && !f.at.After(to) && !slices.Contains(out, f.msg) {
			out = append(out, f.msg)
		}
	}
	return out
}

// summary returns the mean and max of every series sampled within [from,
// to]. The mean is weighted by the interval each sample covers, so a rate
// averaged over a short interval counts for little.
func (l *sampleLog) summary(from, to time.Time) []result.SeriesSummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []result.SeriesSummary
	var weights []float64
	index := map[[2]string]int{}
	for _, p := range l.points {
		if p.at.Before(from) || p.at.After(to) {
			continue
		}
		key := [2]string{p.m.Component, p.m.Metric}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, result.SeriesSummary{Component: p.m.Component, Metric: p.m.Metric, Unit: p.m.Unit, Max: math.Inf(-1), Limit: p.m.Limit, Harness: p.m.Harness})
			weights = append(weights, 0)
		}
		s := &out[i]
		w := max(p.since.Seconds(), 1e-3)
		weights[i] += w
		s.Mean += (p.m.Value - s.Mean) * w / weights[i]
		s.Max = max(s.Max, p.m.Value)
		if p.m.Limit > 0 {
			s.Limit = p.m.Limit
		}
		s.Samples++
	}
	return out
}

// processSampler measures the generator process itself: CPU in cores since
// the previous sample (limit GOMAXPROCS), resident memory in bytes (limit:
// the tightest of its cgroup's, GOMEMLIMIT and the host's memory) and open
// file descriptors (limit: the soft RLIMIT_NOFILE).
type processSampler struct {
	lastAt  time.Time
	lastCPU time.Duration
}

func newProcessSampler() *processSampler { return &processSampler{} }

// Sample implements Sampler.
func (p *processSampler) Sample(_ context.Context, now time.Time) ([]Measurement, error) {
	cpu := processCPU()
	var out []Measurement
	if !p.lastAt.IsZero() && now.After(p.lastAt) {
		cores := (cpu - p.lastCPU).Seconds() / now.Sub(p.lastAt).Seconds()
		out = append(out, Measurement{Component: "generator", Metric: "cpu", Unit: "cores", Value: cores, Limit: float64(runtime.GOMAXPROCS(0))})
	}
	p.lastAt, p.lastCPU = now, cpu
	if rss, err := residentBytes(); err == nil {
		out = append(out, Measurement{Component: "generator", Metric: "memory", Unit: "bytes", Value: float64(rss), Limit: float64(memoryLimit())})
	}
	if n := openFiles(); n >= 0 {
		out = append(out, Measurement{Component: "generator", Metric: "files", Unit: "count", Value: float64(n), Limit: float64(fileLimit())})
	}
	return out, nil
}
