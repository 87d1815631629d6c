package grpcc_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/grpcc"
)

// health is a gRPC server nobody generated code for here: the standard
// health service, whose Check answers as the asked service's name says —
// "code=N" fails with status code N, "sleep=D" answers after D, "hold"
// answers once release is closed — and whose Watch streams n statuses for
// "n=N".
type health struct {
	healthpb.UnimplementedHealthServer
	release chan struct{}
	arrived chan struct{}
	calls   atomic.Int64
}

func (h *health) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.calls.Add(1)
	name, arg, _ := strings.Cut(r.Service, "=")
	switch name {
	case "code":
		n, _ := strconv.Atoi(arg)
		return nil, status.Error(codes.Code(n), "asked for "+codes.Code(n).String())
	case "sleep":
		d, _ := time.ParseDuration(arg)
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	case "hold":
		h.arrived <- struct{}{}
		<-h.release
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (h *health) Watch(r *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	_, arg, _ := strings.Cut(r.Service, "=")
	n, _ := strconv.Atoi(arg)
	for range n {
		if err := s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
			return err
		}
	}
	return nil
}

// serve starts h on a loopback port for the test's length, with what
// more registers.
func serve(t *testing.T, h *health, more ...func(*grpc.Server)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	for _, m := range more {
		m(srv)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String()
}

func check(service string) func(ctx context.Context, cc grpc.ClientConnInterface) error {
	return func(ctx context.Context, cc grpc.ClientConnInterface) error {
		_, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		return err
	}
}

// TestClassify maps every status code, and the errors that carry none.
func TestClassify(t *testing.T) {
	want := map[codes.Code]loadtest.Outcome{
		codes.OK:                 loadtest.OK,
		codes.DeadlineExceeded:   loadtest.Timeout,
		codes.Unavailable:        loadtest.TransportError,
		codes.Canceled:           loadtest.TransportError,
		codes.Unknown:            loadtest.AppError,
		codes.InvalidArgument:    loadtest.AppError,
		codes.NotFound:           loadtest.AppError,
		codes.AlreadyExists:      loadtest.AppError,
		codes.PermissionDenied:   loadtest.AppError,
		codes.ResourceExhausted:  loadtest.AppError,
		codes.FailedPrecondition: loadtest.AppError,
		codes.Aborted:            loadtest.AppError,
		codes.OutOfRange:         loadtest.AppError,
		codes.Unimplemented:      loadtest.AppError,
		codes.Internal:           loadtest.AppError,
		codes.DataLoss:           loadtest.AppError,
		codes.Unauthenticated:    loadtest.AppError,
	}
	for code, o := range want {
		assert.Equal(t, o, grpcc.Classify(status.Error(code, "x")), code.String())
		if code != codes.OK { // status.Error(codes.OK, …) is nil
			assert.Equal(t, o, grpcc.Classify(fmt.Errorf("wrapped: %w", status.Error(code, "x"))), "wrapped "+code.String())
		}
	}
	assert.Equal(t, loadtest.OK, grpcc.Classify(nil))
	assert.Equal(t, loadtest.Timeout, grpcc.Classify(context.DeadlineExceeded))
	assert.Equal(t, loadtest.Timeout, grpcc.Classify(os.ErrDeadlineExceeded))
	assert.Equal(t, loadtest.TransportError, grpcc.Classify(context.Canceled))
	assert.Equal(t, loadtest.TransportError, grpcc.Classify(errors.New("no status")))
}

// TestOutcomesOfRealCalls: calls to a real server end in the outcome
// their status says; a call past its deadline is a Timeout, and a target
// that refuses connections a TransportError.
func TestOutcomesOfRealCalls(t *testing.T) {
	h := &health{}
	addr := serve(t, h)
	gc, err := grpcc.New(addr, grpcc.Options{Conns: 2, Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	defer gc.Close()
	ctx := t.Context()
	for _, c := range []struct {
		service string
		want    loadtest.Outcome
	}{
		{"", loadtest.OK},
		{"code=5", loadtest.AppError},  // NotFound
		{"code=8", loadtest.AppError},  // ResourceExhausted
		{"code=13", loadtest.AppError}, // Internal
		{"code=14", loadtest.TransportError},
		{"sleep=1s", loadtest.Timeout},
	} {
		r := gc.Call(ctx, check(c.service))
		assert.Equal(t, c.want, r.Outcome, "%q: %v", c.service, r.Err)
		assert.Zero(t, r.Queued, "nothing waited")
	}
	assert.Equal(t, int64(6), h.calls.Load(), "every call reached the server")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := l.Addr().String()
	require.NoError(t, l.Close())
	down, err := grpcc.New(closed, grpcc.Options{Timeout: 2 * time.Second})
	require.NoError(t, err)
	defer down.Close()
	r := down.Call(ctx, check(""))
	assert.Equal(t, loadtest.TransportError, r.Outcome, "%v", r.Err)
}

// TestStreamingCallsCountTheirMessages: a server-streaming call is one
// request whose function reads the stream; a stream that ends short of
// what the function expects is its error.
func TestStreamingCallsCountTheirMessages(t *testing.T) {
	addr := serve(t, &health{})
	gc, err := grpcc.New(addr, grpcc.Options{})
	require.NoError(t, err)
	defer gc.Close()
	watch := func(sent, want int) func(ctx context.Context, cc grpc.ClientConnInterface) error {
		return func(ctx context.Context, cc grpc.ClientConnInterface) error {
			s, err := healthpb.NewHealthClient(cc).Watch(ctx, &healthpb.HealthCheckRequest{Service: "n=" + strconv.Itoa(sent)})
			if err != nil {
				return err
			}
			for i := range want {
				if _, err := s.Recv(); err != nil {
					return status.Errorf(codes.DataLoss, "message %d of %d: %v", i+1, want, err)
				}
			}
			return nil
		}
	}
	assert.Equal(t, loadtest.OK, gc.Call(t.Context(), watch(5, 5)).Outcome)
	r := gc.Call(t.Context(), watch(3, 5))
	assert.Equal(t, loadtest.AppError, r.Outcome, "a missed message fails the call")
	assert.ErrorContains(t, r.Err, "message 4 of 5")
}

// TestAQueueInThePoolShows: with one call allowed in flight, a second
// waits for the first, is not sent meanwhile, and reports its wait as
// Queued; one that waits past its deadline is a Timeout that never
// reached the server.
func TestAQueueInThePoolShows(t *testing.T) {
	h := &health{release: make(chan struct{}), arrived: make(chan struct{}, 4)}
	addr := serve(t, h)
	gc, err := grpcc.New(addr, grpcc.Options{MaxInFlight: 1, Timeout: 5 * time.Second})
	require.NoError(t, err)
	defer gc.Close()
	n, what := gc.Limit()
	assert.Equal(t, 1, n)
	assert.Contains(t, what, "grpcc.Options.MaxInFlight")

	first := make(chan loadtest.Response, 1)
	go func() { first <- gc.Call(t.Context(), check("hold")) }()
	<-h.arrived
	second := make(chan loadtest.Response, 1)
	go func() { second <- gc.Call(t.Context(), check("")) }()

	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	r := gc.Call(short, check(""))
	assert.Equal(t, loadtest.Timeout, r.Outcome, "%v", r.Err)
	assert.ErrorContains(t, r.Err, "no free slot")
	assert.Positive(t, r.Queued)
	assert.Equal(t, int64(1), h.calls.Load(), "the queued calls did not reach the server")

	close(h.release)
	assert.Equal(t, loadtest.OK, (<-first).Outcome)
	r = <-second
	assert.Equal(t, loadtest.OK, r.Outcome)
	assert.Positive(t, r.Queued, "the second call waited for the first")
	assert.Equal(t, int64(2), h.calls.Load())
}

// TestARunSeesThePoolsQueue: a step whose calls outrun a pool of one slot
// (40 calls a second of 50 ms each) is invalid, the reason naming the
// pool's knob; the same step with room is valid.
func TestARunSeesThePoolsQueue(t *testing.T) {
	addr := serve(t, &health{})
	run := func(slots int) []string {
		gc, err := grpcc.New(addr, grpcc.Options{MaxInFlight: slots})
		require.NoError(t, err)
		defer gc.Close()
		res, err := loadtest.Run(t.Context(), loadtest.Scenario{
			Name:      t.Name(),
			Workload:  &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "check", Weight: 1, Do: gc.Func(check("sleep=50ms"))}}},
			Plan:      loadtest.Levels(0, 1500*time.Millisecond, 40),
			SelfCheck: loadtest.SelfCheck{MaxHostSteal: -1, MaxHostOther: -1, MaxScheduleLag: -1, MaxCPU: -1, PoolKnob: "grpcc.Options.MaxInFlight"},
			Logf:      t.Logf,
		})
		require.NoError(t, err)
		require.Len(t, res.Steps, 1)
		return res.Steps[0].InvalidReasons()
	}
	queued := run(1)
	require.NotEmpty(t, queued, "one slot for 40 calls a second of 50 ms")
	assert.Contains(t, strings.Join(queued, "; "), "raise grpcc.Options.MaxInFlight")
	assert.Empty(t, run(16), "sixteen slots hold the load")
}
