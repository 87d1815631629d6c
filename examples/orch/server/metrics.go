package server

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/headroom-dev/headroom/examples/internal/kit"
)

// metrics holds the orchestrator's Prometheus collectors. A nil *metrics
// (metrics off) records nothing and costs nothing.
type metrics struct {
	reg           *prometheus.Registry
	http          *kit.HTTPMetrics
	events        *prometheus.CounterVec
	attempts      *prometheus.CounterVec
	running       prometheus.Gauge
	claims        prometheus.Counter
	ticks         *prometheus.CounterVec
	notifications *prometheus.CounterVec
}

func newMetrics(s *Server) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orch_events_total",
			Help: "Events this process wrote, by kind.",
		}, []string{"kind"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orch_attempts_total",
			Help: "Attempts this runner finished, by outcome (ok, error, abandoned).",
		}, []string{"outcome"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "orch_attempts_running",
			Help: "Attempts this runner is running now.",
		}),
		claims: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orch_claims_total",
			Help: "Claim queries this runner ran (each asks for all its free slots).",
		}),
		ticks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orch_ticks_total",
			Help: "Mission ticks the worker ran, by reason (event: an event that changes what happens next; sweep).",
		}, []string{"reason"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orch_notifications_total",
			Help: "Notifications received over LISTEN, by channel.",
		}, []string{"channel"}),
	}
	m.http = kit.NewHTTPMetrics(m.reg, "orch", "Time to answer an HTTP request, by route (for a live stream: how long it was held).")
	gauge := func(name, help string, labels prometheus.Labels, f func() float64) {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, f))
	}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.events, m.attempts, m.running, m.claims, m.ticks, m.notifications)
	gauge("orch_held_streams", "Live mission streams held open.", nil, func() float64 { return float64(s.hub.held.Load()) })
	gauge("orch_stream_events_total", "Events queued on live streams since start.", prometheus.Labels{"outcome": "queued"}, func() float64 { return float64(s.hub.sent.Load()) })
	gauge("orch_stream_events_total", "Events queued on live streams since start.", prometheus.Labels{"outcome": "dropped"}, func() float64 { return float64(s.hub.dropped.Load()) })
	gauge("orch_runner_free_slots", "Attempt slots this runner has free (0 for other roles).", nil, func() float64 {
		if s.runner == nil {
			return 0
		}
		return float64(int64(s.cfg.RunnerSlots) - s.runner.running.Load())
	})
	dbHelp := "Database connections of the process's pool, by state."
	gauge("orch_db_connections", dbHelp, prometheus.Labels{"state": "in_use"}, func() float64 { return float64(s.pool.Stat().AcquiredConns()) })
	gauge("orch_db_connections", dbHelp, prometheus.Labels{"state": "idle"}, func() float64 { return float64(s.pool.Stat().IdleConns()) })
	gauge("orch_db_max_connections", "The most database connections the pool opens (ORCH_DB_MAX_CONNS).", nil, func() float64 { return float64(s.pool.Stat().MaxConns()) })
	gauge("orch_db_acquire_wait_seconds_total", "Time spent waiting for a pool connection since start.", nil, func() float64 { return s.pool.Stat().AcquireDuration().Seconds() })
	gauge("orch_listening", "1 while the LISTEN connection is in force.", nil, func() float64 {
		if s.listening.Load() {
			return 1
		}
		return 0
	})
	return m
}

func (m *metrics) event(kind string) {
	if m != nil {
		m.events.WithLabelValues(kind).Inc()
	}
}

func (m *metrics) attempt(outcome string) {
	if m != nil {
		m.attempts.WithLabelValues(outcome).Inc()
	}
}

func (m *metrics) attemptsRunning(d float64) {
	if m != nil {
		m.running.Add(d)
	}
}

func (m *metrics) claim() {
	if m != nil {
		m.claims.Inc()
	}
}

func (m *metrics) tick(reason string) {
	if m != nil {
		m.ticks.WithLabelValues(reason).Inc()
	}
}

func (m *metrics) notification(channel string) {
	if m != nil {
		m.notifications.WithLabelValues(channel).Inc()
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
