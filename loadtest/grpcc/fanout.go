package grpcc

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// DefaultFanoutKind is the kind of a stream's fan-out samples when
// Fanout.Kind is empty, as sse's and wsc's.
const DefaultFanoutKind = "fanout"

// Stream is the receiving side of a server-streaming or bidirectional
// call as generated stubs return it: grpc.ServerStreamingClient[T] and
// grpc.BidiStreamingClient[Req, T] are Streams of T.
type Stream[T any] interface {
	Recv() (*T, error)
}

// Fanout measures what a held server stream delivers, as sse and wsc
// measure pushed messages: each message's fan-out delay is its receipt
// time less the time the server wrote it, which WrittenAt reads from a
// field of the message (a google.protobuf.Timestamp, a Unix time).
type Fanout[T any] struct {
	// Sink receives one sample per message under Kind: OK with its fan-out
	// delay, or, for a message WrittenAt cannot date, a ProtocolError with
	// the reason.
	Sink loadtest.Sink
	// Kind names the samples; empty means DefaultFanoutKind.
	Kind string
	// WrittenAt returns the time the server wrote msg, or an error for a
	// message that carries none or an invalid one.
	WrittenAt func(msg *T) (time.Time, error)
	// OnMessage, when set, sees every message after its sample, such as
	// to count it for a delivery check.
	OnMessage func(msg *T, received time.Time)
	// Now is the receipt clock; nil means time.Now. The server's clock
	// must be the same (one host) for the delays to mean anything.
	Now func() time.Time
	// Delivery, when set, is given every message received, to meet the
	// stream's expected messages (Delivery.Expect, ExpectID): a message
	// expected and never received is a missed message, a KindDelivery
	// AppError sample.
	Delivery *Delivery
	// ID, with Delivery, returns a message's id for ExpectID; nil or ""
	// means the message has none and meets the oldest Expect.
	ID func(msg *T) string
}

// FanoutStats count what Receive read.
type FanoutStats struct {
	// Messages is the number of messages received.
	Messages int64
	// Undated is the number whose written time WrittenAt could not read.
	Undated int64
	// ClockSkew is the number written after their receipt (recorded as
	// zero delay): the clocks disagree.
	ClockSkew int64
}

// Receive reads s until the stream ends, recording each message's fan-out
// delay, and returns what it counted and how the stream ended: nil for
// its normal end (io.EOF), else the stream's error (its status, for
// Classify). Run it in a held stream's goroutine; cancelling the call's
// context ends it with that status.
func (f *Fanout[T]) Receive(s Stream[T]) (FanoutStats, error) {
	if f.WrittenAt == nil {
		return FanoutStats{}, errors.New("grpcc: Fanout.WrittenAt is nil; give a function that reads the written time from a message's field")
	}
	kind := f.Kind
	if kind == "" {
		kind = DefaultFanoutKind
	}
	now := f.Now
	if now == nil {
		now = time.Now
	}
	var st FanoutStats
	if f.Delivery != nil {
		f.Delivery.opened()
	}
	for {
		msg, err := s.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			if f.Delivery != nil {
				f.Delivery.ended(err)
			}
			return st, err
		}
		at := now()
		st.Messages++
		written, err := f.WrittenAt(msg)
		switch {
		case err != nil:
			st.Undated++
			f.record(kind, 0, loadtest.Response{Outcome: loadtest.ProtocolError, Err: fmt.Errorf("grpcc: message %d has no written time: %w", st.Messages, err)})
		default:
			d := at.Sub(written)
			if d < 0 {
				st.ClockSkew++
				d = 0
			}
			f.record(kind, d, loadtest.Response{Outcome: loadtest.OK})
		}
		if f.Delivery != nil {
			var id []byte
			if f.ID != nil {
				id = []byte(f.ID(msg))
			}
			f.Delivery.arrived(id, at)
		}
		if f.OnMessage != nil {
			f.OnMessage(msg, at)
		}
	}
}

func (f *Fanout[T]) record(kind string, d time.Duration, r loadtest.Response) {
	if f.Sink != nil {
		f.Sink.Record(kind, d, r)
	}
}
