package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// countingHealth answers Check for "" and fails every other service
// with NotFound.
type countingHealth struct {
	healthpb.UnimplementedHealthServer
	calls atomic.Int64
}

func (h *countingHealth) Check(_ context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.calls.Add(1)
	if r.Service != "" {
		return nil, status.Error(codes.NotFound, "no such service")
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func grpcServer(t *testing.T, h *countingHealth, reflect bool) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	if reflect {
		reflection.Register(srv)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return "grpc://" + l.Addr().String()
}

// headroom run -grpc calls a method it learns of by reflection: a ladder
// step at 200 calls a second passes, the kind named after the method; a
// request the server fails (NotFound) fails the run with app errors.
func TestRunGRPC(t *testing.T) {
	h := &countingHealth{}
	url := grpcServer(t, h, true)
	dir := t.TempDir()
	base := []string{"-url", url, "-grpc", "grpc.health.v1.Health/Check", "-rates", "200", "-ramp", "0s", "-hold", "1s", "-host-check=false"}
	var stdout bytes.Buffer
	err := runCmd(append(base, "-body", `{"service": ""}`, "-o", filepath.Join(dir, "ok.json")), &stdout)
	require.NoError(t, err, stdout.String())
	res, err := result.ReadResult(filepath.Join(dir, "ok.json"))
	require.NoError(t, err)
	require.Len(t, res.Steps, 1)
	assert.Equal(t, result.Pass, res.Steps[0].Verdict)
	assert.Positive(t, res.Steps[0].Kind("Check").Total(), "the kind is the method's name")
	assert.Equal(t, "grpc.health.v1.Health/Check", res.Params["grpc"])
	assert.GreaterOrEqual(t, h.calls.Load(), int64(150))

	stdout.Reset()
	err = runCmd(append(base, "-body", `{"service": "nope"}`, "-o", filepath.Join(dir, "fail.json")), &stdout)
	var ee *exitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, exitFail, ee.code, "%v", err)
	res, err = result.ReadResult(filepath.Join(dir, "fail.json"))
	require.NoError(t, err)
	assert.Positive(t, res.Steps[0].Kind("Check").Outcomes[result.AppError], "NotFound is an app error")
}

// Bad gRPC input is refused before any call: an HTTP URL, a method the
// server lacks, a request that is not its message, a server without
// reflection and no -proto-set, a target where nothing listens.
func TestRunGRPCRefusesBadInput(t *testing.T) {
	h := &countingHealth{}
	url := grpcServer(t, h, true)
	bare := grpcServer(t, &countingHealth{}, false)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "grpc://" + l.Addr().String()
	require.NoError(t, l.Close())
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-url", "http://127.0.0.1:1", "-grpc", "grpc.health.v1.Health/Check"}, "with -grpc, give grpc://host:port"},
		{[]string{"-url", url, "-grpc", "grpc.health.v1.Health/Nope"}, "has no method Nope"},
		{[]string{"-url", url, "-grpc", "grpc.health.v1.Health/Check", "-body", `{"svc": 1}`}, "is not a grpc.health.v1.HealthCheckRequest in protobuf JSON"},
		{[]string{"-url", url, "-grpc", "grpc.health.v1.Health/Check", "-header", "X: y"}, "-header are HTTP's"},
		{[]string{"-url", bare, "-grpc", "grpc.health.v1.Health/Check"}, "describe the method with -proto-set"},
		{[]string{"-url", closed, "-grpc", "grpc.health.v1.Health/Check"}, "start the service, fix -url"},
		{[]string{"-url", url, "-grpc", "grpc.health.v1.Health/Check", "-proto-set", filepath.Join(t.TempDir(), "none.pb")}, "descriptor set"},
	} {
		var stdout bytes.Buffer
		err := runCmd(append(c.args, "-rates", "50", "-ramp", "0s", "-hold", "1s"), &stdout)
		require.Error(t, err, "%v", c.args)
		assert.ErrorContains(t, err, c.want, "%v", c.args)
	}
	assert.Zero(t, h.calls.Load(), "no call reached the server")
}
