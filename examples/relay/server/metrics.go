package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// metrics holds the relay's Prometheus collectors. A nil *metrics (metrics
// off) records nothing and costs nothing.
type metrics struct {
	reg   *prometheus.Registry
	http  *kit.HTTPMetrics
	calls *prometheus.CounterVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "relay_tool_calls_total",
			Help: "tools/call requests finished, by outcome (ok, tool_error, upstream_error, timeout, cancelled).",
		}, []string{"outcome"}),
	}
	m.http = kit.NewHTTPMetrics(m.reg, "relay", "Time to answer an HTTP request, by route (for streams: until the stream is open).")
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.calls,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "relay_inflight_requests",
			Help: "POST /mcp requests being served.",
		}, func() float64 { return float64(s.calls.count()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "relay_upstream_queued",
			Help: "Upstream requests waiting for a worker (sync mode).",
		}, func() float64 { return float64(s.up.queued.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "relay_upstream_active",
			Help: "Upstream requests in their round trip.",
		}, func() float64 { return float64(s.up.active.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "relay_db_connections",
			Help:        "Database connections of the relay's pool, by state.",
			ConstLabels: prometheus.Labels{"state": "in_use"},
		}, func() float64 { n, _, _ := s.store.connections(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "relay_db_connections",
			Help:        "Database connections of the relay's pool, by state.",
			ConstLabels: prometheus.Labels{"state": "idle"},
		}, func() float64 { _, n, _ := s.store.connections(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "relay_db_max_connections",
			Help: "The most database connections the relay's pool opens.",
		}, func() float64 { _, _, n := s.store.connections(); return float64(n) }),
	)
	for k := range numStreamKinds {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "relay_held_streams",
			Help:        "Event streams held open, by kind (user: GET /mcp and subscriptions/listen, workspace: GET /api/events).",
			ConstLabels: prometheus.Labels{"kind": k.String()},
		}, func() float64 { return float64(s.hub.heldStreams(k)) }))
	}
	return m
}

// call counts one finished tools/call.
func (m *metrics) call(outcome string) {
	if m != nil {
		m.calls.WithLabelValues(outcome).Inc()
	}
}

// handler serves GET /metrics.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// instrument wraps h to count and time its requests under route.
func (m *metrics) instrument(route string, h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	return m.http.Instrument(route, h)
}
