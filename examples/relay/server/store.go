package server

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

// principal is an authenticated user with the connectors it owns.
type principal struct {
	UserID      int64
	WorkspaceID int64
	Connectors  []connector
}

// connector is one of a user's upstream MCP servers.
type connector struct {
	ID   int64
	Name string
	URL  string
}

// callRecord is what one tools/call leaves in the usage table.
type callRecord struct {
	WorkspaceID int64
	UserID      int64
	ConnectorID int64
	Tool        string
	StartedAt   time.Time
	Duration    time.Duration
	Outcome     string
	Bytes       int64
}

// event is one row of the events table as the streams deliver it.
type event struct {
	// ID is events.id.
	ID int64
	// WorkspaceID and UserID say whose event it is.
	WorkspaceID, UserID int64
	// Kind is events.kind ("call").
	Kind string
	// Payload is events.payload, a JSON object.
	Payload string
	// WrittenAt is events.created_at: the database clock when the row was
	// written (PostgreSQL), or the relay's clock at insert (SQLite).
	WrittenAt time.Time
}

// ToolStats is the dashboard's line for one tool over a window.
type ToolStats struct {
	// Tool is the tool's name as clients call it ("<connector>__<tool>").
	Tool string `json:"tool"`
	// Calls is the number of calls.
	Calls int64 `json:"calls"`
	// Errors is the number of calls whose outcome was not "ok".
	Errors int64 `json:"errors"`
	// ErrorRate is Errors/Calls, 0 to 1.
	ErrorRate float64 `json:"error_rate"`
	// P95DurationUS is the 95th percentile of the call duration in
	// microseconds, interpolated between ranks as percentile_cont does.
	P95DurationUS float64 `json:"p95_duration_us"`
}

// errStoreClosed is returned by a store used after close.
var errStoreClosed = errors.New("relay: store is closed")

// store is the relay's database: PostgreSQL or SQLite.
type store interface {
	// dialect names the backend ("postgres", "sqlite").
	dialect() string
	// connections returns the database connections in use and idle, and the most
	// the store opens.
	connections() (inUse, idle, most int)
	// authenticate finds the user whose users.token_hash is tokenHash, with
	// its connectors, in one query; ok is false when there is none.
	authenticate(ctx context.Context, tokenHash string) (p principal, ok bool, err error)
	// recordCall writes the usage row and the event row of one call and
	// returns the event; the store then delivers it to the subscriber.
	recordCall(ctx context.Context, rec callRecord, payload string) (event, error)
	// eventsAfter returns up to limit events of the workspace (of one user
	// when userID is not 0) with ids above afterID, oldest first.
	eventsAfter(ctx context.Context, workspaceID, userID, afterID int64, limit int) ([]event, error)
	// dashboard aggregates usage of the workspace since the given time, one
	// query; nPlusOne issues one query per tool instead (the fault).
	dashboard(ctx context.Context, workspaceID int64, since time.Time, nPlusOne bool) ([]ToolStats, error)
	// schemaVersion returns the applied schema version.
	schemaVersion(ctx context.Context) (int, error)
	// barrier returns once every event committed before it was called has
	// been delivered to the subscriber.
	barrier(ctx context.Context) error
	// close releases the store's connections and goroutines.
	close()
}

// latestVersion returns the newest migration version of dialect d.
func latestVersion(d schema.Dialect) int {
	ms := schema.Migrations(d)
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// p95 returns the 95th percentile of n sorted values whose ranks
// floor(0.95·(n−1)) and the next are lo and hi, as percentile_cont does.
func p95(n int64, lo, hi float64) float64 {
	if n <= 1 {
		return lo
	}
	pos := 0.95 * float64(n-1)
	frac := pos - math.Floor(pos)
	return lo + frac*(hi-lo)
}

// sortStats orders lines by calls, most first, then by tool name.
func sortStats(s []ToolStats) {
	slices.SortFunc(s, func(a, b ToolStats) int {
		if a.Calls != b.Calls {
			return cmp.Compare(b.Calls, a.Calls)
		}
		return strings.Compare(a.Tool, b.Tool)
	})
}

// finishStats fills ErrorRate.
func finishStats(s []ToolStats) []ToolStats {
	for i := range s {
		if s[i].Calls > 0 {
			s[i].ErrorRate = float64(s[i].Errors) / float64(s[i].Calls)
		}
	}
	return s
}
