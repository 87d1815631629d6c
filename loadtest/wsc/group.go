package wsc

import (
	"context"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/internal/delivery"
)

// closeWorkers is how many connections Group.Close closes at once: each
// close is a handshake round trip, and a group may hold thousands.
const closeWorkers = 64

// Group is a set of connections sharing one Config and one set of
// counters, such as every modeled user's socket in a run.
type Group struct {
	cfg   Config
	own   bool      // cfg.HTTPClient is the group's: Close releases it
	c     counters  // the group's counts, summed over its connections
	epoch time.Time // cfg.Now at NewGroup: the origin of the group's clock
	rules delivery.Rules

	mu    sync.Mutex
	conns map[*Conn]struct{} // open: a closed connection leaves the group
}

// NewGroup returns a Group for cfg. It fails when the URL or a field is
// invalid; the error names it and the fix.
func NewGroup(cfg Config) (*Group, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	g := &Group{cfg: c, own: cfg.HTTPClient == nil, epoch: c.Now(), conns: map[*Conn]struct{}{}}
	g.rules = delivery.Rules{Kind: KindDelivery, Timeout: c.DeliveryTimeout, TrackIDs: c.TrackIDs,
		Now: c.Now, Epoch: g.epoch, Prefix: "wsc", Noun: "message", Total: &g.c.dl}
	return g, nil
}

// Open starts a connection that connects and is held (reconnecting with
// Config.Reconnect) until ctx ends or Close is called. header adds the
// connection's own handshake headers (a user's token) to the group's; an
// invalid one leaves the connection down, its KindConnect sample and its
// calls' errors naming the field.
func (g *Group) Open(ctx context.Context, header ...httpc.Header) *Conn {
	return g.OpenFor(ctx, g.cfg.Sink, header...)
}

// OpenFor is Open for a connection whose samples go to sink instead of
// Config.Sink: one group can serve many modeled users, each recording into
// its own loadtest.User.
func (g *Group) OpenFor(ctx context.Context, sink loadtest.Sink, header ...httpc.Header) *Conn {
	c := newConn(g, sink)
	g.mu.Lock()
	g.conns[c] = struct{}{}
	g.mu.Unlock()
	c.c.opened.Add(1)
	g.c.opened.Add(1)
	h, err := headers(g.cfg.Header, header)
	c.start(ctx, h, err)
	return c
}

// Stats returns the group's counters now, summed over its connections.
func (g *Group) Stats() Stats {
	st := g.c.snapshot()
	st.Clock = g.cfg.ClockName
	return st
}

// Close closes every connection of the group, a few dozen handshakes at
// a time (see Conn.Close for the delivery samples it records), releases
// the group's handshake client and returns the group's final counters.
func (g *Group) Close() Stats {
	g.mu.Lock()
	conns := make([]*Conn, 0, len(g.conns))
	for c := range g.conns {
		conns = append(conns, c)
	}
	g.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, closeWorkers)
	for _, c := range conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c.Close()
		})
	}
	wg.Wait()
	if g.own {
		g.cfg.HTTPClient.CloseIdleConnections()
	}
	return g.Stats()
}
