package sse

import (
	"fmt"

	"context"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/internal/delivery"

	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// Group is a set of streams sharing one Config and one set of counters,
// such as every modeled user's notification stream in a run.
type Group struct {
	cfg   Config
	tgt   target
	c     counters
	epoch time.Time // cfg.Now at NewGroup: the origin of the group's clock
	rules delivery.Rules
	// ownDial says Config.Dial was given (a test's net.Pipe, maybe inside
	// a synctest bubble): the streams' deep steps do not use the shared
	// worker pool then.
	ownDial bool

	mu      sync.Mutex
	streams map[*Stream]struct{} // open: a closed stream leaves the group
}

// NewGroup returns a Group for cfg. It fails when the URL or a field is
// invalid; the error names it.
func NewGroup(cfg Config) (*Group, error) {
	c, t, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &Group{cfg: c, tgt: t, epoch: c.Now(), ownDial: cfg.Dial != nil}
	g.rules = delivery.Rules{Kind: KindDelivery, Timeout: c.DeliveryTimeout, TrackIDs: c.TrackIDs,
		Now: c.Now, Epoch: g.epoch, Prefix: "sse", Noun: "event", Total: &g.c.dl}
	return g, nil
}

// Open starts a stream that connects, holds and reconnects until ctx ends
// or Close is called. header adds per-stream request headers (a user's
// token, an X-Forwarded-For address) to the group's.
func (g *Group) Open(ctx context.Context, header ...httpc.Header) *Stream {
	return g.OpenFor(ctx, g.cfg.Sink, header...)
}

// OpenFor is Open for a stream whose samples go to sink instead of
// Config.Sink: one group can serve many modeled users, each recording into
// its own loadtest.User, where a group per user would repeat the whole
// configuration for every stream.
func (g *Group) OpenFor(ctx context.Context, sink loadtest.Sink, header ...httpc.Header) *Stream {
	s := newStream(g, sink, header)
	g.mu.Lock()
	if g.streams == nil {
		g.streams = map[*Stream]struct{}{}
	}
	g.streams[s] = struct{}{}
	g.mu.Unlock()
	g.c.streams.Add(1)
	s.c.streams.Add(1)
	s.start(ctx)
	return s
}

// Stats returns the group's counters now, summed over its streams.
func (g *Group) Stats() Stats {
	st := g.c.snapshot()
	st.Clock = g.cfg.ClockName
	return st
}

// Close stops every stream (see Stream.Close for the delivery samples it
// records) and returns the group's final counters.
func (g *Group) Close() Stats {
	g.mu.Lock()
	streams := make([]*Stream, 0, len(g.streams))
	for s := range g.streams {
		streams = append(streams, s)
	}
	g.mu.Unlock()
	for _, s := range streams {
		s.cancel()
	}
	for _, s := range streams {
		s.Close()
	}
	return g.Stats()
}

// Healthy returns a check that a step violates when a stream missed a
// keepalive (KindHealth) or broke the protocol (KindMalformed): every
// sample of those kinds is a fault.
func Healthy() loadtest.Check {
	return loadtest.Custom("streams healthy", func(s *loadtest.StepResult) error {
		for _, kind := range []string{KindHealth, KindMalformed} {
			if k := s.Kind(kind); k != nil && k.Total() > 0 {
				return fmt.Errorf("%d %s sample(s): %v", k.Total(), kind, k.Errors)
			}
		}
		return nil
	})
}

// StreamsResume returns a check that the streams that dropped in a step
// (a KindStream sample ending in a transport or protocol error: a
// replica lost, a proxy restarted) connected again within it: at least
// as many connects succeeded (KindConnect OK) as streams dropped. A new
// stream's first connect counts too, so the check bounds from one side:
// it catches streams that gave up or kept failing to reconnect, as a
// load balancer still sending them to a lost replica makes them. A drop
// in the last moments of the hold may reconnect after it: inject faults
// early enough in the hold for the streams' backoff.
func StreamsResume() loadtest.Check {
	return loadtest.Custom("dropped streams resume", func(s *loadtest.StepResult) error {
		var dropped, connected int64
		if k := s.Kind(KindStream); k != nil {
			dropped = k.Outcomes[loadtest.TransportError] + k.Outcomes[loadtest.ProtocolError]
		}
		if k := s.Kind(KindConnect); k != nil {
			connected = k.Outcomes[loadtest.OK]
		}
		if dropped > connected {
			failed := int64(0)
			if k := s.Kind(KindConnect); k != nil {
				failed = k.Total() - connected
			}
			return fmt.Errorf("%d streams dropped, %d connected again (%d connects failed)", dropped, connected, failed)
		}
		return nil
	})
}
