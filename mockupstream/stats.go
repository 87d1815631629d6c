package mockupstream

import (
	"maps"
	"sync/atomic"
)

// Stats are the upstream's counters since start or the last reset, as GET
// /admin/stats returns them. Maps hold every known outcome and kind, zeros
// included, so a scenario can index them without checking.
type Stats struct {
	// Served is the number of requests ended (answered, failed, reset,
	// hung up or abandoned by their client).
	Served int64 `json:"served"`
	// InFlight is the number of requests read and not yet ended, at the
	// moment of the snapshot. It is never reset.
	InFlight int64 `json:"in_flight"`
	// MaxInFlight is the highest InFlight since the last reset.
	MaxInFlight int64 `json:"max_in_flight"`
	// BytesSent is the number of response body bytes written.
	BytesSent int64 `json:"bytes_sent"`
	// ByOutcome counts ended requests by [Outcome] name ("ok",
	// "tool_error", "http_5xx", "reset", "hang", "slow_headers",
	// "rpc_error", "http_4xx", "client_gone", "aborted").
	ByOutcome map[string]int64 `json:"by_outcome"`
	// ByMethod counts ended requests by [Kind] name ("initialize",
	// "tools/list", "tools/call", "echo", "ping", "notification", "other").
	ByMethod map[string]int64 `json:"by_method"`
}

// Sub returns the counters of s minus those of prev, for the requests ended
// between two snapshots; InFlight and MaxInFlight are those of s.
func (s Stats) Sub(prev Stats) Stats {
	d := Stats{
		Served:      s.Served - prev.Served,
		InFlight:    s.InFlight,
		MaxInFlight: s.MaxInFlight,
		BytesSent:   s.BytesSent - prev.BytesSent,
		ByOutcome:   maps.Clone(s.ByOutcome),
		ByMethod:    maps.Clone(s.ByMethod),
	}
	for k, v := range prev.ByOutcome {
		d.ByOutcome[k] -= v
	}
	for k, v := range prev.ByMethod {
		d.ByMethod[k] -= v
	}
	return d
}

// counters are the live, lock-free counters behind Stats.
type counters struct {
	served, inFlight, maxInFlight, bytes atomic.Int64
	byOutcome                            [NumOutcomes]atomic.Int64
	byKind                               [NumKinds]atomic.Int64
}

// begin counts a request read.
func (c *counters) begin() {
	n := c.inFlight.Add(1)
	for {
		m := c.maxInFlight.Load()
		if n <= m || c.maxInFlight.CompareAndSwap(m, n) {
			return
		}
	}
}

// end counts a request ended with outcome o after writing bytes body bytes.
func (c *counters) end(k Kind, o Outcome, bytes int64) {
	c.byOutcome[o].Add(1)
	c.byKind[k].Add(1)
	c.bytes.Add(bytes)
	c.served.Add(1)
	c.inFlight.Add(-1)
}

// undeliver moves a request counted as ended with outcome o to ClientGone
// after its answer failed to go out; unsent body bytes are taken back.
func (c *counters) undeliver(o Outcome, unsent int64) {
	c.byOutcome[o].Add(-1)
	c.byOutcome[ClientGone].Add(1)
	c.bytes.Add(-unsent)
}

// reset zeroes the counters except InFlight; MaxInFlight restarts from it.
func (c *counters) reset() {
	c.served.Store(0)
	c.bytes.Store(0)
	for i := range c.byOutcome {
		c.byOutcome[i].Store(0)
	}
	for i := range c.byKind {
		c.byKind[i].Store(0)
	}
	c.maxInFlight.Store(c.inFlight.Load())
}

// snapshot reads the counters. Each counter is read atomically; the set is
// not one atomic snapshot, so under load Served may differ by a few from
// the sum of ByOutcome.
func (c *counters) snapshot() Stats {
	s := Stats{
		Served:      c.served.Load(),
		InFlight:    c.inFlight.Load(),
		MaxInFlight: c.maxInFlight.Load(),
		BytesSent:   c.bytes.Load(),
		ByOutcome:   make(map[string]int64, NumOutcomes),
		ByMethod:    make(map[string]int64, NumKinds),
	}
	for i := range c.byOutcome {
		s.ByOutcome[Outcome(i).String()] = c.byOutcome[i].Load()
	}
	for i := range c.byKind {
		s.ByMethod[Kind(i).String()] = c.byKind[i].Load()
	}
	return s
}
