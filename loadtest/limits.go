package loadtest

import (
	"fmt"
	"math"
	"strings"

	units "github.com/docker/go-units"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// Limiter is a bound inside the generator that requests wait on, such as an
// HTTP client's pool of connections (*httpc.Client implements it). A
// workload that declares its limiters is checked against the plan before
// anything runs, so a pool smaller than the load needs is an error, not a
// queue measured as the target's latency.
type Limiter interface {
	// Limit returns how many requests may be in flight through it at once
	// (0 for no bound) and what it is, for messages: "the HTTP client
	// (httpc.Options.MaxConnsPerHost)".
	Limit() (n int, what string)
}

// fitsLimiters reports a limiter of w that is smaller than the most
// requests the plan's top level may hold in flight.
func fitsLimiters(w Workload, p Plan) error {
	u, ok := w.(*Users)
	if !ok || len(u.Limiters) == 0 {
		return nil
	}
	per := max(u.InFlightPerUser, 1)
	need := int(math.Ceil(p.MaxLevel())) * per
	var errs []string
	for _, l := range u.Limiters {
		if l == nil {
			continue
		}
		if n, what := l.Limit(); n > 0 && n < need {
			errs = append(errs, fmt.Sprintf("%s allows %d requests at once, but the plan reaches %g users with up to %d in flight each: raise it to at least %d",
				what, n, p.MaxLevel(), per, need))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("scenario: a limiter of the generator is smaller than the load: %s", strings.Join(errs, "; "))
	}
	return nil
}

// saturated returns the resources that ran near their limit: a CPU series
// whose mean reached 90% of its quota, any other series whose maximum did;
// those of the system under test, and those of the harness apart.
func saturated(rs []result.SeriesSummary) (system, harness []string) {
	for _, r := range rs {
		if r.Limit <= 0 {
			continue
		}
		v, how := r.Max, "max"
		if r.Metric == "cpu" {
			v, how = r.Mean, "mean"
		}
		if v < 0.9*r.Limit {
			continue
		}
		msg := fmt.Sprintf("%s %s: %s %s of %s (%.0f%%)", r.Component, r.Metric, how,
			formatValue(v, r.Unit), formatValue(r.Limit, r.Unit), v/r.Limit*100)
		if r.Harness {
			harness = append(harness, msg)
		} else {
			system = append(system, msg)
		}
	}
	return system, harness
}

// formatValue renders a value in its unit: bytes in binary units, cores and
// counts as numbers.
func formatValue(v float64, unit string) string {
	switch unit {
	case "bytes":
		return formatBytes(int64(v))
	case "cores":
		return fmt.Sprintf("%.2f cores", v)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func formatBytes(n int64) string { return units.BytesSize(float64(n)) }
