package grpcc_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/grpcc"
)

// ticks is a server-streaming method written by hand, with no generated
// code: its request (a Duration) says how long ago each message claims to
// have been written; it streams five Timestamps, the third with no time
// when the request is negative, then ends with status Aborted when the
// request is one hour.
var ticks = grpc.ServiceDesc{
	ServiceName: "test.Clock",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{{StreamName: "Ticks", ServerStreams: true,
		Handler: func(_ any, s grpc.ServerStream) error {
			var age durationpb.Duration
			if err := s.RecvMsg(&age); err != nil {
				return err
			}
			for i := range 5 {
				ts := timestamppb.New(time.Now().Add(-age.AsDuration().Abs()))
				if i == 2 && age.AsDuration() < 0 {
					ts = nil
				}
				if err := s.SendMsg(ts); err != nil {
					return err
				}
			}
			if age.AsDuration() == time.Hour {
				return status.Error(codes.Aborted, "cut")
			}
			return nil
		}}},
}

type samples struct {
	mu   sync.Mutex
	lat  []time.Duration
	out  []loadtest.Outcome
	errs []string
}

func (s *samples) Record(_ string, lat time.Duration, r loadtest.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat = append(s.lat, lat)
	s.out = append(s.out, r.Outcome)
	msg := ""
	if r.Err != nil {
		msg = r.Err.Error()
	}
	s.errs = append(s.errs, msg)
}

// TestFanoutOfAServerStream: each message of a real server stream is a
// fan-out sample of its receipt less its written time (300 ms ago here);
// a message without a time is a protocol error sample; the stream's end
// status comes back for Classify.
func TestFanoutOfAServerStream(t *testing.T) {
	addr := serve(t, &health{}, func(s *grpc.Server) { s.RegisterService(&ticks, nil) })
	gc, err := grpcc.New(addr, grpcc.Options{})
	require.NoError(t, err)
	defer gc.Close()
	open := func(age time.Duration) grpcc.Stream[timestamppb.Timestamp] {
		cs, err := gc.Conn().NewStream(t.Context(), &ticks.Streams[0], "/test.Clock/Ticks")
		require.NoError(t, err)
		require.NoError(t, cs.SendMsg(durationpb.New(age)))
		require.NoError(t, cs.CloseSend())
		return &grpc.GenericClientStream[durationpb.Duration, timestamppb.Timestamp]{ClientStream: cs}
	}
	rec := &samples{}
	var seen int
	f := grpcc.Fanout[timestamppb.Timestamp]{Sink: rec, OnMessage: func(*timestamppb.Timestamp, time.Time) { seen++ },
		WrittenAt: func(m *timestamppb.Timestamp) (time.Time, error) {
			if m.GetSeconds() == 0 {
				return time.Time{}, errors.New("no time")
			}
			return m.AsTime(), nil
		}}

	st, err := f.Receive(open(300 * time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, grpcc.FanoutStats{Messages: 5}, st)
	assert.Equal(t, 5, seen)
	require.Len(t, rec.lat, 5)
	for i, d := range rec.lat {
		assert.Equal(t, loadtest.OK, rec.out[i])
		assert.GreaterOrEqual(t, d, 300*time.Millisecond)
		assert.Less(t, d, 1300*time.Millisecond)
	}

	rec.lat, rec.out = nil, nil
	st, err = f.Receive(open(-300 * time.Millisecond))
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.Undated)
	assert.Equal(t, []loadtest.Outcome{loadtest.OK, loadtest.OK, loadtest.ProtocolError, loadtest.OK, loadtest.OK}, rec.out)

	st, err = f.Receive(open(time.Hour))
	assert.Equal(t, int64(5), st.Messages)
	assert.Equal(t, codes.Aborted, status.Code(err))
	assert.Equal(t, loadtest.AppError, grpcc.Classify(err))

	_, err = (&grpcc.Fanout[timestamppb.Timestamp]{}).Receive(open(0))
	assert.ErrorContains(t, err, "WrittenAt is nil")
}

// TestAMissedMessageOfAServerStream: a held stream's Delivery meets the
// messages expected of it as they arrive, by id or in order, and judges
// each one that never comes an AppError delivery sample naming it and
// how the stream ended; the Deliveries sum every stream's counts.
func TestAMissedMessageOfAServerStream(t *testing.T) {
	addr := serve(t, &health{}, func(s *grpc.Server) { s.RegisterService(&ticks, nil) })
	gc, err := grpcc.New(addr, grpcc.Options{})
	require.NoError(t, err)
	defer gc.Close()
	cs, err := gc.Conn().NewStream(t.Context(), &ticks.Streams[0], "/test.Clock/Ticks")
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg(durationpb.New(time.Millisecond)))
	require.NoError(t, cs.CloseSend())

	all := grpcc.NewDeliveries(grpcc.DeliveryConfig{Timeout: 300 * time.Millisecond})
	rec := &samples{}
	d := all.For(rec)
	d.Expect(6) // the stream sends 5, one of them "m3"
	d.ExpectID("m3")
	d.ExpectID("m9") // never sent
	n := 0
	f := grpcc.Fanout[timestamppb.Timestamp]{Delivery: d,
		WrittenAt: func(m *timestamppb.Timestamp) (time.Time, error) { return m.AsTime(), nil },
		ID:        func(*timestamppb.Timestamp) string { n++; return fmt.Sprintf("m%d", n) }}
	st, err := f.Receive(&grpc.GenericClientStream[durationpb.Duration, timestamppb.Timestamp]{ClientStream: cs})
	require.NoError(t, err)
	assert.Equal(t, int64(5), st.Messages)

	time.Sleep(600 * time.Millisecond) // past the deadline of what is missing
	want := grpcc.DeliveryStats{Expected: 8, Delivered: 5, Missing: 3, Overdue: 3}
	assert.Equal(t, want, d.Close())
	assert.Equal(t, want, all.Stats())
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var ok int
	var errs []string
	for i, o := range rec.out {
		switch o {
		case loadtest.OK:
			ok++
		case loadtest.AppError:
			errs = append(errs, rec.errs[i])
		}
	}
	assert.Equal(t, 5, ok)
	require.Len(t, errs, 3)
	text := strings.Join(errs, "\n")
	assert.Contains(t, text, "grpcc: 2 messages expected")
	assert.Contains(t, text, `grpcc: message id "m9" expected`)
	assert.Contains(t, text, "stream ended normally (1 opened)")
}
