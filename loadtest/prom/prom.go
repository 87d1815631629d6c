// Package prom samples a target's Prometheus metrics into a load test's
// series: a [Sampler] scrapes a /metrics endpoint every sampling interval
// and records the gauges and counters it is told to, so that a step
// reports what the target itself saw — its goroutines, Go heap, held
// streams — beside the container's CPU and memory.
package prom

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/headroom-dev/headroom/loadtest"
)

// Series is one metric to record.
type Series struct {
	// Metric is the Prometheus metric's name, e.g. "go_goroutines".
	Metric string
	// Labels select one series of the metric; every label given must
	// match, others are summed over (nil sums every series of the metric).
	Labels map[string]string
	// Name is the series' name in the result; default Metric.
	Name string
	// Unit is the series' unit: "count", "bytes", "seconds"; default
	// "count".
	Unit string
}

// GoRuntime are the series of a Go program's runtime and process that
// the client library exports by default: goroutines, the heap in use,
// goroutine stacks, the resident set.
var GoRuntime = []Series{
	{Metric: "go_goroutines", Name: "goroutines"},
	{Metric: "go_memstats_heap_inuse_bytes", Name: "heap_inuse", Unit: "bytes"},
	{Metric: "go_memstats_stack_inuse_bytes", Name: "stack_inuse", Unit: "bytes"},
	{Metric: "process_resident_memory_bytes", Name: "rss", Unit: "bytes"},
}

// Sampler is a loadtest.Sampler scraping one Prometheus endpoint.
type Sampler struct {
	// URL is the metrics endpoint, e.g. stack.TargetURL + "/metrics".
	URL string
	// Component names what is measured in the result, e.g. "relay".
	Component string
	// Series are the metrics to record; a metric the endpoint does not
	// export is an error naming it.
	Series []Series
	// Client scrapes; nil means a client with a 5 s timeout.
	Client *http.Client
}

// Validate reports a Sampler that cannot work, naming the field.
func (s *Sampler) Validate() error {
	var errs []error
	if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
		errs = append(errs, fmt.Errorf("prom: URL %q is not an http(s) URL; give the target's metrics endpoint, e.g. http://127.0.0.1:8080/metrics", s.URL))
	}
	if s.Component == "" {
		errs = append(errs, errors.New("prom: Component is empty; name what is measured, e.g. relay"))
	}
	if len(s.Series) == 0 {
		errs = append(errs, errors.New("prom: no Series; give the metrics to record, e.g. prom.GoRuntime"))
	}
	return errors.Join(errs...)
}

// Sample implements loadtest.Sampler: one scrape, one measurement per
// series found; the error names what could not be read.
func (s *Sampler) Sample(ctx context.Context, _ time.Time) ([]loadtest.Measurement, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	fams, err := s.scrape(ctx)
	if err != nil {
		return nil, err
	}
	var out []loadtest.Measurement
	var missing []string
	for _, sr := range s.Series {
		v, ok := value(fams[sr.Metric], sr.Labels)
		if !ok {
			missing = append(missing, sr.Metric)
			continue
		}
		name, unit := sr.Name, sr.Unit
		if name == "" {
			name = sr.Metric
		}
		if unit == "" {
			unit = "count"
		}
		out = append(out, loadtest.Measurement{Component: s.Component, Metric: name, Unit: unit, Value: v})
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("prom: %s does not export %s; is the target's metrics endpoint on (the relay's needs RELAY_METRICS=1)?", s.URL, strings.Join(missing, ", "))
	}
	return out, nil
}

func (s *Sampler) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	c := s.Client
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	req, err := http.NewRequestWithContext(ctx, "GET", s.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("prom: %w", err)
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("prom: scrape %s: %w", s.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return nil, fmt.Errorf("prom: scrape %s: status %d: %s", s.URL, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("prom: parse %s: %w", s.URL, err)
	}
	return fams, nil
}

// value sums the gauge, counter or untyped values of the family's series
// whose labels match.
func value(f *dto.MetricFamily, want map[string]string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	var sum float64
	found := false
	for _, m := range f.GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		default:
			continue
		}
		found = true
	}
	return sum, found
}

func matches(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
