package loadtest

import (
	"context"
	"time"
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
