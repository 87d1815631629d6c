package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// metrics holds the desk's Prometheus collectors. A nil *metrics (metrics
// off) records nothing and costs nothing.
type metrics struct {
	reg           *prometheus.Registry
	http          *kit.HTTPMetrics
	counts        *prometheus.CounterVec
	accessLookups *prometheus.CounterVec
	notifications *prometheus.CounterVec
	mails         *prometheus.CounterVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		counts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "desk_counts_computations_total",
			Help: "Sidebar count queries run, by mode (shared: one per unit for all its agents; agent: one per request, DESK_SHARED_COUNTS=0).",
		}, []string{"mode"}),
		accessLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "desk_access_lookups_total",
			Help: "Session checks, by result (hit: from the access cache; miss: looked up and cached; off: looked up, cache off; unknown: no such session).",
		}, []string{"result"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "desk_notifications_total",
			Help: "Change notifications received over LISTEN, by type (case, outbox).",
		}, []string{"type"}),
		mails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "desk_outbox_mails_total",
			Help: "Outgoing email the worker handled, by outcome (sent, error).",
		}, []string{"outcome"}),
	}
	m.http = kit.NewHTTPMetrics(m.reg, "desk", "Time to answer an HTTP request, by route (for the live stream: how long it was held).")
	gauge := func(name, help string, labels prometheus.Labels, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.counts, m.accessLookups, m.notifications, m.mails)
	gauge("desk_held_streams", "Live streams (GET /api/stream) held open.", nil, func() float64 { return float64(s.hub.held.Load()) })
	gauge("desk_stream_events_total", "Events queued on live streams since start.", prometheus.Labels{"outcome": "queued"}, func() float64 { return float64(s.hub.sent.Load()) })
	gauge("desk_stream_events_total", "Events queued on live streams since start.", prometheus.Labels{"outcome": "dropped"}, func() float64 { return float64(s.hub.dropped.Load()) })
	dbHelp := "Database connections of the desk's pool, by state."
	gauge("desk_db_connections", dbHelp, prometheus.Labels{"state": "in_use"}, func() float64 { return float64(s.pool.Stat().AcquiredConns()) })
	gauge("desk_db_connections", dbHelp, prometheus.Labels{"state": "idle"}, func() float64 { return float64(s.pool.Stat().IdleConns()) })
	gauge("desk_db_max_connections", "The most database connections the desk's pool opens (DESK_DB_MAX_CONNS).", nil, func() float64 { return float64(s.pool.Stat().MaxConns()) })
	gauge("desk_db_acquire_wait_seconds_total", "Time requests waited for a pool connection since start.", nil, func() float64 { return s.pool.Stat().AcquireDuration().Seconds() })
	gauge("desk_listening", "1 while the LISTEN connection is in force.", nil, func() float64 {
		if s.listening.Load() {
			return 1
		}
		return 0
	})
	return m
}

func (m *metrics) countComputed(mode string) {
	if m != nil {
		m.counts.WithLabelValues(mode).Inc()
	}
}

func (m *metrics) access(result string) {
	if m != nil {
		m.accessLookups.WithLabelValues(result).Inc()
	}
}

func (m *metrics) notification(t string) {
	if m != nil {
		m.notifications.WithLabelValues(t).Inc()
	}
}

func (m *metrics) mail(outcome string) {
	if m != nil {
		m.mails.WithLabelValues(outcome).Inc()
	}
}

func (m *metrics) handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// instrument wraps h to count and time its requests under route.
func (m *metrics) instrument(route string, h http.Handler) http.Handler {
	if m == nil {
		return h
	}
	return m.http.Instrument(route, h)
}
