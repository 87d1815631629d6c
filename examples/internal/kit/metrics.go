package kit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HTTPMetrics counts and times a service's HTTP requests by route, as
// <prefix>_http_requests_total{route, code} and
// <prefix>_http_request_duration_seconds{route}.
type HTTPMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

// NewHTTPMetrics registers the two collectors on reg. latencyHelp is the
// duration's help text, which says what it means for the service's
// streams (until open, or how long held).
func NewHTTPMetrics(reg prometheus.Registerer, prefix, latencyHelp string) *HTTPMetrics {
	m := &HTTPMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: prefix + "_http_requests_total",
			Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    prefix + "_http_request_duration_seconds",
			Help:    latencyHelp,
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25, 50},
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.latency)
	return m
}

// Instrument wraps h to count and time its requests under route.
func (m *HTTPMetrics) Instrument(route string, h http.Handler) http.Handler {
	lat := m.latency.WithLabelValues(route)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		lat.Observe(time.Since(start).Seconds())
		code := rec.code
		if code == 0 {
			code = http.StatusOK // hijacked streams, and handlers that only Write
		}
		m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	})
}

// statusRecorder remembers the status code; Unwrap lets
// http.ResponseController reach Flush, Hijack and SetWriteDeadline
// underneath.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
