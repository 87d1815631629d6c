package relayseed

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/seed"
)

// The distributions of the recorded calls, after the gateway's published
// workload model.
var (
	// callDuration: tool calls take 1.2 s at the median, 5% over 12 s,
	// capped at 50 s (in microseconds).
	callDuration = dist.MustLogNormal[float64](1.2e6, 12e6, 50e6)
	// timeoutDuration is how long a call that timed out took: the relay's
	// maximum upstream call timeout, 50 s.
	timeoutDuration = int64(50e6)
	// outcomes: 8% tool errors, a little timeout and upstream error.
	outcomes = mustChoice(
		dist.Weighted[string]{Weight: 0.910, Value: schema.OutcomeOK},
		dist.Weighted[string]{Weight: 0.080, Value: schema.OutcomeToolError},
		dist.Weighted[string]{Weight: 0.006, Value: schema.OutcomeTimeout},
		dist.Weighted[string]{Weight: 0.004, Value: schema.OutcomeUpstreamError},
	)
	// responseBytes: mostly a few KB, 2% around 1 MB.
	responseBytes = mustMix(
		dist.Weighted[dist.Dist[float64]]{Weight: 0.98, Value: dist.MustLogNormal[float64](2048, 12*1024, 256*1024)},
		dist.Weighted[dist.Dist[float64]]{Weight: 0.02, Value: dist.Fixed[float64]{Value: 1 << 20, Jitter: 256 << 10}},
	)
)

// hourWeights is the daily cycle of calls, by UTC hour: a working-day peak
// in the afternoon, a quiet night. dayWeights is the weekly cycle, Sunday
// first. Integer weights keep the per-hour counts exact on every machine.
var (
	hourWeights = [24]int64{20, 15, 12, 10, 10, 12, 20, 35, 60, 85, 100, 105, 100, 100, 105, 100, 90, 75, 60, 50, 45, 40, 32, 25}
	dayWeights  = [7]int64{3, 10, 10, 10, 10, 10, 4}
)

// Random streams: one per table, so adding events does not change usage.
const (
	streamUsers = 1 + iota
	streamUsage
	streamEvents
)

func mustChoice[V any](opts ...dist.Weighted[V]) dist.Choice[V] {
	c, err := dist.NewChoice(opts...)
	if err != nil {
		panic(err)
	}
	return c
}

func mustMix[T dist.Number](parts ...dist.Weighted[dist.Dist[T]]) dist.Mix[T] {
	m, err := dist.NewMix(parts...)
	if err != nil {
		panic(err)
	}
	return m
}

// Table is one table of a population, ready for [Copy].
type Table struct {
	// Name is the table's name in the relay's schema.
	Name string
	// Columns are the columns each row fills, in order.
	Columns []string
	// Rows generates the rows, the same on every call.
	Rows seed.Rows
	// Len is the number of rows Rows yields.
	Len int64
}

// Tables returns the population's tables in the order they load (parents
// first): workspaces, users, connectors, usage, events. Rows hold times as
// the dialect stores them (time.Time on PostgreSQL, Unix microseconds on
// SQLite); usage and events ids are left to the database. Apply loads these;
// they are exported for custom loaders and for dumping a population.
func (p *Population) Tables(d schema.Dialect) []Table {
	g := newGenerator(p, d)
	s := p.Spec
	return []Table{
		{"workspaces", workspaceColumns, g.workspaceRows, int64(len(p.Workspaces))},
		{"users", userColumns, g.userRows, int64(len(p.Users))},
		{"connectors", connectorColumns, g.connectorRows, int64(len(p.Users) * s.ConnectorsPerUser)},
		{"usage", usageColumns, g.usageRows, int64(s.UsageRows)},
		{"events", eventColumns, g.eventRows, int64(s.EventsRows)},
	}
}

// generator draws a population's rows. Its rows are the same for the same
// normalized spec; only the representation of times differs by dialect.
type generator struct {
	p       *Population
	dialect schema.Dialect
	start   time.Time // End - Days
	// users picks the user of a call: a skewed (Zipf-like) activity over
	// users in a seeded random order, so a few users (bots, power users)
	// make many calls.
	users dist.Choice[int32]
	// tools picks the tool of a call: tool i has weight 1/(i+1).
	tools dist.Choice[int32]
	// qualified are the tools' names as the relay records them,
	// "<connector>__<tool>": tool i is on connector i mod ConnectorsPerUser.
	qualified []string
}

func newGenerator(p *Population, d schema.Dialect) *generator {
	s := p.Spec
	g := &generator{p: p, dialect: d, start: s.End.Add(-time.Duration(s.Days) * 24 * time.Hour)}
	g.qualified = make([]string, len(s.Tools))
	for i, t := range s.Tools {
		g.qualified[i] = ConnectorName(i%s.ConnectorsPerUser) + "__" + t
	}
	if s.UsageRows == 0 && s.EventsRows == 0 {
		return g
	}
	r := dist.New(s.Seed, streamUsers)
	order := r.Perm(len(p.Users))
	uw := make([]dist.Weighted[int32], len(p.Users))
	for rank, i := range order {
		uw[rank] = dist.Weighted[int32]{Weight: 1 / math.Pow(float64(rank+1), 0.8), Value: int32(i)}
	}
	g.users = mustChoice(uw...)
	tw := make([]dist.Weighted[int32], len(s.Tools))
	for i := range tw {
		tw[i] = dist.Weighted[int32]{Weight: 1 / float64(i+1), Value: int32(i)}
	}
	g.tools = mustChoice(tw...)
	return g
}

// timeValue is t as the dialect stores it.
func (g *generator) timeValue(t time.Time) any {
	if g.dialect == schema.SQLite {
		return t.UnixMicro()
	}
	return t
}

// created is the creation time of the i-th row of a small table: a second
// apart, ending a day before the history starts.
func (g *generator) created(i int, n int) any {
	return g.timeValue(g.start.Add(-24*time.Hour - time.Duration(n-i)*time.Second))
}

var (
	workspaceColumns = []string{"id", "name", "created_at"}
	userColumns      = []string{"id", "workspace_id", "name", "token_hash", "created_at"}
	connectorColumns = []string{"id", "user_id", "name", "upstream_url"}
	usageColumns     = []string{"workspace_id", "user_id", "connector_id", "tool", "started_at", "duration_us", "outcome", "bytes"}
	eventColumns     = []string{"workspace_id", "user_id", "kind", "payload", "created_at"}
)

func (g *generator) workspaceRows(yield func([]any) bool) error {
	row := make([]any, len(workspaceColumns))
	for i, id := range g.p.Workspaces {
		row[0], row[1], row[2] = id, "workspace-"+strconv.FormatInt(id, 10), g.created(i, len(g.p.Workspaces))
		if !yield(row) {
			return nil
		}
	}
	return nil
}

func (g *generator) userRows(yield func([]any) bool) error {
	row := make([]any, len(userColumns))
	for i, u := range g.p.Users {
		row[0], row[1], row[2] = u.ID, u.WorkspaceID, u.Name
		row[3] = schema.TokenHash(Token(g.p.Spec.Secret, u.ID))
		row[4] = g.created(i, len(g.p.Users))
		if !yield(row) {
			return nil
		}
	}
	return nil
}

func (g *generator) connectorRows(yield func([]any) bool) error {
	row := make([]any, len(connectorColumns))
	url := g.p.Spec.UpstreamURL
	for _, u := range g.p.Users {
		for _, c := range u.Connectors {
			row[0], row[1], row[2], row[3] = c.ID, u.ID, c.Name, url
			if !yield(row) {
				return nil
			}
		}
	}
	return nil
}

// call is one drawn tool call.
type call struct {
	user      *User
	connector *Connector
	tool      int // index in Spec.Tools
	at        time.Time
	duration  int64 // µs
	outcome   string
	bytes     int64
}

// calls yields n calls spread over the history in time order, drawn from
// the stream. Calls are allotted to hours in proportion to the daily and
// weekly cycle (exactly, in integers), then placed uniformly within the
// hour and sorted.
func (g *generator) calls(n int, stream uint64, yield func(*call) bool) {
	if n == 0 {
		return
	}
	s := g.p.Spec
	r := dist.New(s.Seed, stream)
	hours := s.Days * 24
	weights := make([]int64, hours)
	var total int64
	for h := range weights {
		t := g.start.Add(time.Duration(h) * time.Hour)
		weights[h] = hourWeights[t.Hour()] * dayWeights[t.Weekday()]
		total += weights[h]
	}
	C := s.ConnectorsPerUser
	var c call
	var cum int64
	prev := int64(0)
	var offsets []int64
	for h, w := range weights {
		cum += w
		// Rows up to the end of hour h: floor(n·cum/total).
		upto := mulDiv(int64(n), cum, total)
		k := int(upto - prev)
		prev = upto
		if k == 0 {
			continue
		}
		offsets = slices.Grow(offsets[:0], k)[:k]
		for i := range offsets {
			offsets[i] = r.Int64N(int64(time.Hour / time.Microsecond))
		}
		slices.Sort(offsets)
		hourStart := g.start.Add(time.Duration(h) * time.Hour)
		for _, off := range offsets {
			g.draw(r, &c, C)
			c.at = hourStart.Add(time.Duration(off) * time.Microsecond)
			if !yield(&c) {
				return
			}
		}
	}
}

// draw fills c with a user, connector, tool, outcome, duration and size.
func (g *generator) draw(r *rand.Rand, c *call, connectors int) {
	c.user = &g.p.Users[g.users.Pick(r)]
	ti := int(g.tools.Pick(r))
	c.connector = &c.user.Connectors[ti%connectors]
	c.tool = ti
	c.outcome = outcomes.Pick(r)
	switch c.outcome {
	case schema.OutcomeTimeout:
		c.duration, c.bytes = timeoutDuration, 0
	case schema.OutcomeUpstreamError:
		c.duration, c.bytes = int64(callDuration.Sample(r)), 0
	default:
		c.duration, c.bytes = int64(callDuration.Sample(r)), int64(responseBytes.Sample(r))
	}
	c.duration = max(c.duration, 1)
}

// mulDiv returns a·b/c rounded down, exactly, for 0 <= a and 0 <= b <= c.
func mulDiv(a, b, c int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c)) // hi < c because b <= c
	return int64(q)
}

func (g *generator) usageRows(yield func([]any) bool) error {
	row := make([]any, len(usageColumns))
	g.calls(g.p.Spec.UsageRows, streamUsage, func(c *call) bool {
		row[0], row[1], row[2] = c.user.WorkspaceID, c.user.ID, c.connector.ID
		row[3], row[4], row[5] = g.qualified[c.tool], g.timeValue(c.at), c.duration
		row[6], row[7] = c.outcome, c.bytes
		return yield(row)
	})
	return nil
}

// eventRows yields one "call" event per drawn call, written when the call
// completed (created_at), with the payload the relay writes.
func (g *generator) eventRows(yield func([]any) bool) error {
	row := make([]any, len(eventColumns))
	var buf []byte
	toolJSON := make([][]byte, len(g.qualified))
	for i, q := range g.qualified {
		toolJSON[i] = appendJSONString(nil, q)
	}
	g.calls(g.p.Spec.EventsRows, streamEvents, func(c *call) bool {
		started := c.at.Add(-time.Duration(c.duration) * time.Microsecond)
		buf = appendEventPayload(buf[:0], c, toolJSON[c.tool], started)
		row[0], row[1], row[2] = c.user.WorkspaceID, c.user.ID, "call"
		row[3], row[4] = string(buf), g.timeValue(c.at)
		return yield(row)
	})
	return nil
}

// appendEventPayload appends a call event's one-line JSON, field for field
// as the relay writes it:
// {"tool":"<connector>__<tool>","connector_id":…,"outcome":…,"duration_us":…,"bytes":…,"started_at":"<RFC 3339, UTC, 9 digits>"}.
func appendEventPayload(b []byte, c *call, toolJSON []byte, started time.Time) []byte {
	b = append(b, `{"tool":`...)
	b = append(b, toolJSON...)
	b = append(b, `,"connector_id":`...)
	b = strconv.AppendInt(b, c.connector.ID, 10)
	b = append(b, `,"outcome":"`...)
	b = append(b, c.outcome...)
	b = append(b, `","duration_us":`...)
	b = strconv.AppendInt(b, c.duration, 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, c.bytes, 10)
	b = append(b, `,"started_at":"`...)
	b = started.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000Z07:00")
	return append(b, '"', '}')
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
