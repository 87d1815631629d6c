//go:build load

package centrifugo

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// TestLoad_Broadcast checks that one Centrifugo node (1 CPU / 512 MiB, its
// memory engine) behind Caddy delivers every message published through its
// HTTP API to every subscriber holding a server-sent-event stream, with no
// publish failing and — at full size — a fan-out p95 under 250 ms, as the
// publish rate climbs a ladder.
//
// Knobs: RATES (messages per second), SUBSCRIBERS, RAMP, HOLD,
// LOADTEST_BACKEND.
func TestLoad_Broadcast(t *testing.T) {
	for _, backend := range fixtures.Backends(t, fixtures.BackendLocal) { // -short: one backend (Chat has the other), both with LOADTEST_MATRIX=full
		t.Run("backend="+backend, func(t *testing.T) { broadcast(t, backend) })
	}
}

func broadcast(t *testing.T, backend string) {
	k := loadtest.NewKnobs(t)
	rates := k.Levels("RATES", "20,50,100", "5,10,20")
	subscribers := k.Int("SUBSCRIBERS", "200", "20", 1)
	ramp, hold := k.DurationOrZero("RAMP", "10s", "1s"), k.Duration("HOLD", "60s", "6s")

	stack := fixtures.Start(t, fixtures.WithBackend(backend),
		fixtures.WithDatabase(fixtures.NoDatabase), fixtures.WithoutUpstream(),
		fixtures.WithTarget(fixtures.Service{
			Package: "github.com/centrifugal/centrifugo/v6", // built in this module (a tool dependency)
			Args: []string{"--client.insecure", "--uni_sse.enabled", "--http_api.insecure", "--health.enabled",
				"--http_server.address", "{{.Host}}", "--http_server.port", "{{.Port}}", "--log.level", "warn"},
			GoRuntime: true,
			Ready:     fixtures.HTTPReady("/health", 200),
		}))

	// The subscribers: held streams outside the workload, recording into
	// the run's recorder. Only publications count for delivery, not the
	// connect frame or the pings.
	rec := loadtest.NewRecorder(sse.DefaultFanoutKind, sse.KindDelivery, sse.KindHealth, sse.KindMalformed)
	hc, err := httpc.New(httpc.Options{RootCAPEM: stack.CACertPEM})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	subs, err := sse.NewGroup(sse.Config{URL: stack.URL + "/connection/uni_sse?cf_connect=" + url.QueryEscape(`{"subs":{"news":{}}}`),
		Dialer: hc.Dialer(), Sink: rec, KeepaliveInterval: 25 * time.Second,
		Match: func(ev sse.Event) bool { return bytes.Contains(ev.Data, []byte(`"pub":`)) }})
	require.NoError(t, err)
	streams := make([]*sse.Stream, subscribers)
	for i := range streams {
		streams[i] = subs.Open(t.Context())
	}
	t.Cleanup(func() { subs.Close() })
	require.Eventually(t, func() bool { return subs.Stats().Connected == int64(subscribers) }, 30*time.Second, 50*time.Millisecond)

	publish, err := hc.Prepare("POST", stack.URL+"/api/publish", []httpc.Header{{Name: "Content-Type", Value: "application/json"}}, nil)
	require.NoError(t, err)
	do := func(ctx context.Context) loadtest.Response {
		call := httpc.Call{Body: fmt.Appendf(nil, `{"channel":"news","data":{"written_at":%q}}`, time.Now().UTC().Format(time.RFC3339Nano))}
		r := hc.Exchange(ctx, publish, &call)
		for _, s := range streams {
			if r.Outcome == loadtest.OK {
				s.Expect(1) // every subscriber owes this message
			}
		}
		return r
	}
	checks := []loadtest.Check{loadtest.FailuresBelow("publish", 0.001),
		loadtest.FailuresBelow(sse.KindDelivery, 0.001), sse.Healthy(), stack.ComponentsUp()}
	if !testing.Short() {
		checks = append(checks, loadtest.LatencyBelow(sse.DefaultFanoutKind, 95, 250*time.Millisecond))
	}
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Recorder: rec, Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "publish", Weight: 1, Do: do}}},
		Plan: loadtest.Levels(ramp, hold, rates...), Checks: checks,
		Params: k.Params(),
	}))
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}
