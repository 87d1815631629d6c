//go:build load

package centrifugo

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/wsc"
)

// TestLoad_Chat checks Centrifugo's bidirectional WebSocket transport
// behind Caddy: SUBSCRIBERS users hold a socket subscribed to a channel,
// PUBLISHERS others publish into it over theirs (a command answered by
// its id), and every subscriber must receive every message; no publish
// may fail and, at full size, the fan-out p95 stays under 250 ms. Knobs:
// RATES (messages per second), SUBSCRIBERS, PUBLISHERS, RAMP, HOLD.
func TestLoad_Chat(t *testing.T) {
	for _, backend := range fixtures.Backends(t, fixtures.BackendDocker) { // -short: one backend (Broadcast has the other)
		t.Run("backend="+backend, func(t *testing.T) { chat(t, backend) })
	}
}

func chat(t *testing.T, backend string) {
	k := loadtest.NewKnobs(t)
	rates, ramp, hold := k.Levels("RATES", "20,50,100", "5,10,20"), k.DurationOrZero("RAMP", "10s", "1s"), k.Duration("HOLD", "60s", "6s")
	stack := fixtures.Start(t, fixtures.WithBackend(backend), fixtures.WithDatabase(fixtures.NoDatabase), fixtures.WithoutUpstream(),
		fixtures.WithTarget(fixtures.Service{Package: "github.com/centrifugal/centrifugo/v6", GoRuntime: true, Ready: fixtures.HTTPReady("/health", 200),
			Args: []string{"--client.insecure", "--health.enabled", "--http_server.address", "{{.Host}}", "--http_server.port", "{{.Port}}", "--log.level", "warn"}}))
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(stack.CACertPEM))
	rec := loadtest.NewRecorder(wsc.DefaultFanoutKind, wsc.KindDelivery, wsc.KindConnect, wsc.KindConn, wsc.KindMalformed)
	g, err := wsc.NewGroup(wsc.Config{URL: "wss" + strings.TrimPrefix(stack.URL, "https") + "/connection/websocket", TLS: &tls.Config{RootCAs: roots},
		Sink: rec, Lines: true, Match: func(m []byte) bool { return bytes.Contains(m, []byte(`"pub":`)) },
		OnMessage: func(c *wsc.Conn, m []byte, _ time.Time) { // Centrifugo's ping, {}, wants a pong
			if string(m) == "{}" {
				_ = c.Send(context.Background(), m)
			}
		}})
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	join := func(channel string) *wsc.Conn {
		c := g.Open(t.Context())
		for _, cmd := range []string{`"connect":{}`, `"subscribe":{"channel":"` + channel + `"}`} {
			r := c.Func(func(id string) []byte { return []byte(`{"id":` + id + `,` + cmd + `}`) })(t.Context())
			require.Equal(t, loadtest.OK, r.Outcome, "%s: %v", cmd, r.Err)
		}
		return c
	}
	subs, pubs := make([]*wsc.Conn, k.Int("SUBSCRIBERS", "200", "20", 1)), make([]*wsc.Conn, k.Int("PUBLISHERS", "4", "2", 1))
	for i := range subs {
		subs[i] = join("chat")
	}
	for i := range pubs {
		pubs[i] = join("lobby") // a channel of their own: they must not count as subscribers
	}
	var turn atomic.Uint64
	publish := func(ctx context.Context) loadtest.Response {
		r := pubs[turn.Add(1)%uint64(len(pubs))].Func(func(id string) []byte {
			return fmt.Appendf(nil, `{"id":%s,"publish":{"channel":"chat","data":{"written_at":%q}}}`, id, time.Now().UTC().Format(time.RFC3339Nano))
		})(ctx)
		for _, s := range subs {
			if r.Outcome == loadtest.OK {
				s.Expect(1) // every subscriber owes this message
			}
		}
		return r
	}
	checks := []loadtest.Check{loadtest.FailuresBelow("publish", 0.001), loadtest.FailuresBelow(wsc.KindDelivery, 0.001), wsc.Healthy(), stack.ComponentsUp()}
	if !testing.Short() {
		checks = append(checks, loadtest.LatencyBelow(wsc.DefaultFanoutKind, 95, 250*time.Millisecond))
	}
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{Recorder: rec, Plan: loadtest.Levels(ramp, hold, rates...), Checks: checks, Params: k.Params(),
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "publish", Weight: 1, Do: publish}}}, SelfCheck: loadtest.SelfCheck{PoolKnob: "PUBLISHERS"}}))
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}
