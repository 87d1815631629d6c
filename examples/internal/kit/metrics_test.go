package kit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Requests are counted by route and code (a handler that only writes is a
// 200) and timed by route; the writer underneath stays reachable.
func TestHTTPMetricsCountAndTime(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewHTTPMetrics(reg, "svc", "Time to answer.")
	teapot := m.Instrument("tea", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	plain := m.Instrument("plain", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		assert.NoError(t, http.NewResponseController(w).Flush(), "Flush reaches the recorder underneath")
		_, _ = w.Write([]byte("ok"))
	}))
	for range 2 {
		teapot.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
	plain.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))

	families, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			labels := []string{}
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := f.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case mt.GetCounter() != nil:
				got[key] = mt.GetCounter().GetValue()
			case mt.GetHistogram() != nil:
				got[key] = float64(mt.GetHistogram().GetSampleCount())
			}
		}
	}
	assert.Equal(t, map[string]float64{
		"svc_http_requests_total{code=200,route=plain}":  1,
		"svc_http_requests_total{code=418,route=tea}":    2,
		"svc_http_request_duration_seconds{route=plain}": 1,
		"svc_http_request_duration_seconds{route=tea}":   2,
	}, got)
}
