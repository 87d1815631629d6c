package prom_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/prom"
)

func server(t *testing.T, reg *prometheus.Registry) string {
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// TestSampler reads gauges and counters, selects series by label and sums
// the rest, and names the metric an endpoint lacks.
func TestSampler(t *testing.T) {
	reg := prometheus.NewRegistry()
	streams := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "held_streams"}, []string{"kind"})
	streams.WithLabelValues("user").Set(40)
	streams.WithLabelValues("workspace").Set(2)
	calls := prometheus.NewCounter(prometheus.CounterOpts{Name: "calls_total"})
	calls.Add(7)
	reg.MustRegister(streams, calls, collectors.NewGoCollector())
	s := &prom.Sampler{URL: server(t, reg), Component: "svc", Series: append([]prom.Series{
		{Metric: "held_streams", Labels: map[string]string{"kind": "user"}, Name: "user_streams"},
		{Metric: "held_streams", Name: "streams"},
		{Metric: "calls_total"},
	}, prom.GoRuntime[:3]...)}
	ms, err := s.Sample(t.Context(), time.Now())
	require.NoError(t, err)
	got := map[string]loadtest.Measurement{}
	for _, m := range ms {
		got[m.Metric] = m
		assert.Equal(t, "svc", m.Component)
	}
	assert.Equal(t, 40.0, got["user_streams"].Value)
	assert.Equal(t, 42.0, got["streams"].Value, "series summed over the labels not given")
	assert.Equal(t, 7.0, got["calls_total"].Value)
	assert.Equal(t, "count", got["calls_total"].Unit)
	assert.GreaterOrEqual(t, got["goroutines"].Value, 2.0)
	assert.Equal(t, "bytes", got["heap_inuse"].Unit)
	assert.Positive(t, got["heap_inuse"].Value)
	assert.Positive(t, got["stack_inuse"].Value)

	// A metric the endpoint lacks is named; the others still come back.
	s.Series = append(s.Series, prom.Series{Metric: "relay_held_streams"})
	ms, err = s.Sample(t.Context(), time.Now())
	assert.ErrorContains(t, err, "does not export relay_held_streams")
	assert.Len(t, ms, 6)
}

// TestSampler_Errors: a bad configuration, an endpoint answering an error
// and one that is not there each give an error naming the problem.
func TestSampler_Errors(t *testing.T) {
	_, err := (&prom.Sampler{URL: "127.0.0.1:1/metrics"}).Sample(t.Context(), time.Now())
	assert.ErrorContains(t, err, "not an http(s) URL")
	assert.ErrorContains(t, err, "Component is empty")
	assert.ErrorContains(t, err, "no Series")

	off := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "metrics are off", http.StatusNotFound)
	}))
	t.Cleanup(off.Close)
	_, err = (&prom.Sampler{URL: off.URL, Component: "relay", Series: prom.GoRuntime}).Sample(t.Context(), time.Now())
	assert.ErrorContains(t, err, "status 404: metrics are off")

	url := off.URL
	off.Close()
	_, err = (&prom.Sampler{URL: url, Component: "relay", Series: prom.GoRuntime}).Sample(t.Context(), time.Now())
	assert.ErrorContains(t, err, "prom: scrape")
}
