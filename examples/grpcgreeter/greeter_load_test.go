//go:build load

package grpcgreeter

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	hwpb "google.golang.org/grpc/examples/helloworld/helloworld"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/grpcc"
)

// TestLoad_Greeter climbs a ladder of calls to grpc-go's reflection example
// server (one CPU, 512 MiB) through Caddy (TLS to Caddy, h2c behind it):
// SayHello through its generated stubs, UnaryEcho built from what the
// server says of itself by reflection (no stubs). No call may fail.
// Knobs: RATES (calls per second), RAMP, HOLD, CONNS, LOADTEST_BACKEND.
func TestLoad_Greeter(t *testing.T) {
	for _, backend := range fixtures.Backends(t, fixtures.BackendDocker) { // -short: docker only, both with LOADTEST_MATRIX=full
		t.Run("backend="+backend, func(t *testing.T) { greeter(t, backend) })
	}
}

func greeter(t *testing.T, backend string) {
	k := loadtest.NewKnobs(t)
	rates := k.Levels("RATES", "500,1000,2000", "50,100,200")
	ramp, hold := k.DurationOrZero("RAMP", "10s", "1s"), k.Duration("HOLD", "60s", "6s")
	stack := fixtures.Start(t, fixtures.WithBackend(backend), fixtures.WithDatabase(fixtures.NoDatabase),
		fixtures.WithoutUpstream(), fixtures.WithTarget(fixtures.Service{
			Package:   "google.golang.org/grpc/examples/features/reflection/server", // a tool dependency of this module
			Args:      []string{"-port", "{{.Port}}"},
			GoRuntime: true, H2C: true, // Caddy in front proxies gRPC to it over h2c
		}))
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(stack.CACertPEM))
	gc, err := grpcc.New(strings.TrimPrefix(stack.URL, "https://"), grpcc.Options{Conns: k.Int("CONNS", "2", "1", 1), TLS: &tls.Config{RootCAs: roots}})
	require.NoError(t, err)
	t.Cleanup(func() { gc.Close() })
	d, err := grpcc.Reflect(t.Context(), gc.Conn(), "grpc.examples.echo.Echo")
	require.NoError(t, err)
	echo, err := d.Unary("grpc.examples.echo.Echo/UnaryEcho", `{"message": "hello"}`)
	require.NoError(t, err)
	hello := func(ctx context.Context, cc grpc.ClientConnInterface) error {
		_, err := hwpb.NewGreeterClient(cc).SayHello(ctx, &hwpb.HelloRequest{Name: "headroom"})
		return err
	}
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Workload:  &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "SayHello", Weight: 3, Do: gc.Func(hello)}, {Name: "UnaryEcho", Weight: 1, Do: gc.Func(echo)}}},
		Plan:      loadtest.Levels(ramp, hold, rates...),
		Checks:    []loadtest.Check{loadtest.FailuresBelow("SayHello", 0.001), loadtest.FailuresBelow("UnaryEcho", 0.001), stack.ComponentsUp()},
		SelfCheck: loadtest.SelfCheck{PoolKnob: "grpcc.Options.MaxInFlight (CONNS)"},
		Params:    k.Params(),
	}))
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}
