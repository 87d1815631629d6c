package mockupstream

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/headroom-dev/headroom/loadtest/dist"
)

// Draw is what the model decided for one request.
type Draw struct {
	// Outcome is the request's fate: OK, ToolError (tools/call only),
	// HTTP5xx, Reset, Hang or SlowHeaders.
	Outcome Outcome
	// Delay is how long after reading the request the answer (or the
	// fault) happens. For SlowHeaders it includes Faults.HeaderDelay; for
	// Hang it is Faults.MaxHang, the longest the hang lasts.
	Delay time.Duration
	// Bytes is the size of the tools/call text or /echo body in bytes.
	Bytes int64
	// Message is the tool error's text for ToolError, else empty.
	Message string
}

// toolErrorMessages are the reasons production tool errors gave.
var toolErrorMessages = []string{
	"upstream tool timed out",
	"upstream response too large",
	"account disconnected: reconnect the integration",
	"rate limited by the upstream service",
}

// Model is a validated [Behavior] ready to draw from. Draws are a pure
// function of the seed, the request kind and the request's sequence number,
// so a model is safe for concurrent use and reproducible.
type Model struct {
	b         Behavior
	seed      uint64
	latency   [NumKinds]dist.Dist[time.Duration]
	call      dist.Choice[Outcome] // outcomes of tools/call
	other     dist.Choice[Outcome] // outcomes of the other drawn kinds (no tool errors)
	sizes     dist.Dist[int64]
	maxHang   time.Duration
	extra     time.Duration // header delay of SlowHeaders
	toolsJSON []byte        // the tools/list result
	next      atomic.Uint64 // sequence number of the next request
}

// NewModel validates b and compiles it. A zero b.Seed is replaced by a
// random seed, which [Model.Behavior] reports.
func NewModel(b Behavior) (*Model, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	b = b.withDefaults()
	if b.Seed == 0 {
		var s [8]byte
		_, _ = crand.Read(s[:])
		b.Seed = binary.LittleEndian.Uint64(s[:]) | 1
	}
	m := &Model{b: b, seed: b.Seed, maxHang: b.Faults.MaxHang.D(), extra: b.Faults.HeaderDelay.D()}
	none := dist.Fixed[time.Duration]{}
	for k := range m.latency {
		m.latency[k] = none
	}
	var err error
	if m.latency[KindInitialize], err = compileLatency(b.Initialize); err != nil {
		return nil, err
	}
	if m.latency[KindList], err = compileLatency(b.List); err != nil {
		return nil, err
	}
	if m.latency[KindCall], err = compileLatency(b.Call); err != nil {
		return nil, err
	}
	m.latency[KindEcho] = m.latency[KindCall]

	f := b.Faults
	faults := []dist.Weighted[Outcome]{
		{Weight: f.HTTP5xx, Value: HTTP5xx},
		{Weight: f.Reset, Value: Reset},
		{Weight: f.Hang, Value: Hang},
		{Weight: f.SlowHeaders, Value: SlowHeaders},
	}
	sum := f.HTTP5xx + f.Reset + f.Hang + f.SlowHeaders
	if m.call, err = dist.NewChoice(append([]dist.Weighted[Outcome]{
		{Weight: max(0, 1-sum-b.ToolErrors), Value: OK},
		{Weight: b.ToolErrors, Value: ToolError},
	}, faults...)...); err != nil {
		return nil, err
	}
	if m.other, err = dist.NewChoice(append([]dist.Weighted[Outcome]{
		{Weight: max(0, 1-sum), Value: OK},
	}, faults...)...); err != nil {
		return nil, err
	}

	if len(b.Sizes) == 0 {
		m.sizes = dist.Fixed[int64]{}
	} else {
		parts := make([]dist.Weighted[dist.Dist[int64]], len(b.Sizes))
		for i, s := range b.Sizes {
			parts[i] = dist.Weighted[dist.Dist[int64]]{Weight: s.Weight, Value: clampSize{dist.Fixed[int64]{Value: s.Bytes, Jitter: s.Jitter}}}
		}
		if m.sizes, err = dist.NewMix(parts...); err != nil {
			return nil, err
		}
	}
	m.toolsJSON = toolsJSON(b.ToolCount)
	return m, nil
}

// compileLatency turns a validated Latency into a distribution.
func compileLatency(l Latency) (dist.Dist[time.Duration], error) {
	if l.P95 > 0 {
		d, err := dist.LogNormalFromMedianP95(l.Median.D(), l.P95.D(), l.Cap.D())
		if err != nil {
			return nil, err
		}
		if l.Cap == 0 {
			return capped{d, MaxLatency}, nil
		}
		return d, nil
	}
	d := dist.Fixed[time.Duration]{Value: l.Median.D(), Jitter: l.Jitter.D()}
	if l.Cap > 0 {
		return capped{d, l.Cap.D()}, nil
	}
	return d, nil
}

// capped truncates a latency distribution at Max.
type capped struct {
	d   dist.Dist[time.Duration]
	max time.Duration
}

// Sample draws one latency, at most max.
func (c capped) Sample(r *rand.Rand) time.Duration { return min(c.d.Sample(r), c.max) }

// clampSize keeps a size draw within [0, MaxBytes].
type clampSize struct{ d dist.Dist[int64] }

// Sample draws one size in [0, MaxBytes].
func (c clampSize) Sample(r *rand.Rand) int64 { return min(max(c.d.Sample(r), 0), MaxBytes) }

// Behavior returns the model's behaviour with defaults and the seed filled in.
func (m *Model) Behavior() Behavior { return m.b }

// Next returns the sequence number of the next request: 0, 1, 2, ….
func (m *Model) Next() uint64 { return m.next.Add(1) - 1 }

// Draw returns the fate of request number n of kind k. It is a pure function
// of the model's seed, k and n. Kinds other than KindInitialize, KindList,
// KindCall and KindEcho always draw an immediate OK.
func (m *Model) Draw(k Kind, n uint64) Draw {
	if k > KindEcho {
		return Draw{Outcome: OK}
	}
	var pcg rand.PCG
	pcg.Seed(splitmix(m.seed^splitmix(n)), splitmix(n+0x632be59bd9b4e019))
	r := rand.New(&pcg)
	var d Draw
	if k == KindCall {
		d.Outcome = m.call.Pick(r)
	} else {
		d.Outcome = m.other.Pick(r)
	}
	if d.Outcome == Hang {
		d.Delay = m.maxHang
		return d
	}
	d.Delay = m.latency[k].Sample(r)
	if d.Outcome == SlowHeaders {
		d.Delay += m.extra
	}
	if k == KindCall || k == KindEcho {
		d.Bytes = m.sizes.Sample(r)
	}
	if d.Outcome == ToolError {
		d.Message = toolErrorMessages[r.IntN(len(toolErrorMessages))]
	}
	return d
}

// splitmix is the SplitMix64 finaliser: it spreads consecutive inputs over
// the whole 64-bit range, so consecutive sequence numbers seed unrelated
// generators.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
