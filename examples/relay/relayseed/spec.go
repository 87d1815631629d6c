package relayseed

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/seed"
)

// Spec describes a population. Zero fields take the documented defaults, so
// a Spec with only a Secret is a valid, small population; sizes that are
// zero by default (UsageRows, EventsRows) mean none.
//
// Ids are dense and start at 1: workspaces 1..Workspaces, users
// 1..Workspaces*UsersPerWorkspace (workspace by workspace), connectors
// 1..users*ConnectorsPerUser (user by user). Usage and events ids are
// assigned by the database.
type Spec struct {
	// Name is the population's key in seed_marker; default "headroom".
	Name string
	// Workspaces is the number of workspaces; default 1.
	Workspaces int
	// UsersPerWorkspace is the number of users in each workspace; default
	// 10. Every user has a bearer token ([Token]).
	UsersPerWorkspace int
	// ConnectorsPerUser is the number of connectors of each user; default
	// 5. It may not exceed len(Tools): the tools are dealt round-robin to a
	// user's connectors (tool i to connector i mod ConnectorsPerUser) and
	// each connector needs at least one.
	ConnectorsPerUser int
	// Tools names the tools the upstream lists (the mock upstream's
	// tools/list); default [DefaultTools], the mock's 20 tools. Usage rows
	// draw from them with a skewed (Zipf-like) popularity, earlier tools
	// called more, and record each as the relay does: usage.tool is
	// "<connector>__<tool>".
	Tools []string
	// UpstreamURL is every connector's upstream_url, as reachable from the
	// relay (the mock upstream's MCP endpoint); default
	// [DefaultUpstreamURL].
	UpstreamURL string
	// UsageRows is the number of recorded tool calls in the usage table;
	// default none. They are spread over the Days before End with a daily
	// and weekly cycle.
	UsageRows int
	// EventsRows is the number of rows in the events table (one per past
	// call, kind "call"); default none. Spread like usage.
	EventsRows int
	// Days is the length of the history, in days, ending at End; default
	// 30.
	Days int
	// End is the instant the history ends (exclusive), truncated to the
	// microsecond. The zero End is [DefaultEnd], a fixed instant, so the
	// default is deterministic; a scenario whose target queries a window
	// ending now sets End: time.Now() (which makes each run's spec, and its
	// hash, different: on a database that is kept, Remove before applying
	// again).
	End time.Time
	// Seed selects the random streams: the same Spec and Seed give
	// byte-identical rows. Zero is a valid seed.
	Seed uint64
	// Secret derives every user's token ([Token]); required. It is never
	// printed, encoded, logged or part of [Spec.Hash].
	Secret seed.Secret `json:"-"`
}

// Defaults of a [Spec]'s zero fields.
const (
	DefaultName              = "headroom"
	DefaultWorkspaces        = 1
	DefaultUsersPerWorkspace = 10
	DefaultConnectorsPerUser = 5
	DefaultDays              = 30
	// DefaultUpstreamURL is the mock upstream's MCP endpoint on its default
	// port on loopback.
	DefaultUpstreamURL = "http://127.0.0.1:8765/mcp"
)

// Limits of a [Spec], so that a typo cannot ask for a population that does
// not fit in memory or in a day.
const (
	MaxUsers             = 1_000_000     // Workspaces × UsersPerWorkspace
	MaxConnectorsPerUser = 100           // per user
	MaxTools             = 10_000        // len(Tools)
	MaxRows              = 1_000_000_000 // UsageRows, EventsRows each
	MaxDays              = 3660          // about ten years
)

// DefaultEnd is the End of a Spec that gives none: 2026-01-01T00:00:00Z.
var DefaultEnd = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultTools returns the default tool catalog: the mock upstream's tools
// with its default TOOL_COUNT, MockTools(20).
func DefaultTools() []string { return MockTools(20) }

// MockTools returns the names of the tools a mock upstream with count tools
// lists (TOOL_COUNT): "tool_01" … "tool_20" for 20, zero-padded to the
// width of count and at least two digits.
func MockTools(count int) []string {
	width := max(2, len(strconv.Itoa(count)))
	out := make([]string, count)
	for i := range out {
		out[i] = fmt.Sprintf("tool_%0*d", width, i+1)
	}
	return out
}

// Presets. Copy one, set Secret (and usually UpstreamURL and End), and pass
// it to [Apply].
var (
	// Smoke seeds in well under a second: 10 users, 2,000 usage rows over
	// a week, 200 events.
	Smoke = Spec{Workspaces: 1, UsersPerWorkspace: 10, ConnectorsPerUser: 5,
		UsageRows: 2_000, EventsRows: 200, Days: 7}
	// Published is the population behind the gateway's published
	// measurement: 10,000 users (above the ~8,900-user knee) with five
	// connectors each in one workspace, and ~500,000 recorded calls over
	// 30 days (about a month of busy traffic) for the dashboard to
	// aggregate.
	Published = Spec{Workspaces: 1, UsersPerWorkspace: 10_000, ConnectorsPerUser: 5,
		UsageRows: 500_000, EventsRows: 50_000, Days: 30}
	// Helpdesk is the helpdesk's data scale in the relay's terms: 200 units
	// (workspaces) of 15 agents (3,000 users), 200,000 cases as usage rows
	// and 1,000,000 messages as events, over two years.
	Helpdesk = Spec{Workspaces: 200, UsersPerWorkspace: 15, ConnectorsPerUser: 5,
		UsageRows: 200_000, EventsRows: 1_000_000, Days: 730}
)

// generatorVersion is part of every hash: bump it whenever the rows a spec
// generates change, so a database seeded by an older generator is not
// mistaken for the new one.
const generatorVersion = "headroom-seed/1"

// normalized returns s with its defaults filled in. It does not validate.
func (s Spec) normalized() Spec {
	if s.Name == "" {
		s.Name = DefaultName
	}
	if s.Workspaces == 0 {
		s.Workspaces = DefaultWorkspaces
	}
	if s.UsersPerWorkspace == 0 {
		s.UsersPerWorkspace = DefaultUsersPerWorkspace
	}
	if s.ConnectorsPerUser == 0 {
		s.ConnectorsPerUser = DefaultConnectorsPerUser
	}
	if s.Tools == nil {
		s.Tools = DefaultTools()
	}
	if s.UpstreamURL == "" {
		s.UpstreamURL = DefaultUpstreamURL
	}
	if s.Days == 0 {
		s.Days = DefaultDays
	}
	if s.End.IsZero() {
		s.End = DefaultEnd
	}
	s.End = s.End.UTC().Truncate(time.Microsecond)
	return s
}

// Validate reports every problem with the spec (joined), each naming the
// field and the fix. Apply validates before it touches the database.
func (s Spec) Validate() error { return s.normalized().validate(true) }

func (s Spec) validate(needSecret bool) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("seed: spec: "+format, args...)) }
	for _, f := range []struct {
		name string
		v    int
		max  int
	}{
		{"Workspaces", s.Workspaces, MaxUsers},
		{"UsersPerWorkspace", s.UsersPerWorkspace, MaxUsers},
		{"ConnectorsPerUser", s.ConnectorsPerUser, MaxConnectorsPerUser},
		{"UsageRows", s.UsageRows, MaxRows},
		{"EventsRows", s.EventsRows, MaxRows},
		{"Days", s.Days, MaxDays},
	} {
		switch {
		case f.v < 0:
			bad("%s is %d; sizes must be >= 0 (0 takes the default)", f.name, f.v)
		case f.v > f.max:
			bad("%s is %d, above the limit %d; lower it", f.name, f.v, f.max)
		}
	}
	if s.Workspaces > 0 && s.UsersPerWorkspace > 0 && s.Workspaces > MaxUsers/s.UsersPerWorkspace {
		bad("Workspaces × UsersPerWorkspace = %d × %d is above the limit of %d users; lower one of them",
			s.Workspaces, s.UsersPerWorkspace, MaxUsers)
	}
	if len(s.Tools) == 0 {
		bad("Tools is empty; list the upstream's tool names or leave Tools nil for DefaultTools")
	}
	if len(s.Tools) > MaxTools {
		bad("Tools has %d names, above the limit %d", len(s.Tools), MaxTools)
	}
	if s.ConnectorsPerUser > len(s.Tools) && len(s.Tools) > 0 {
		bad("ConnectorsPerUser is %d but there are only %d tools, and each connector needs at least one; lower ConnectorsPerUser or list more Tools",
			s.ConnectorsPerUser, len(s.Tools))
	}
	seen := make(map[string]bool, len(s.Tools))
	for i, t := range s.Tools {
		switch {
		case t == "":
			bad("Tools[%d] is empty; every tool needs a name", i)
		case strings.Contains(t, "__"):
			bad("Tools[%d] %q contains \"__\", the relay's connector separator; rename it", i, t)
		case seen[t]:
			bad("Tools[%d] %q is listed twice; tool names must be unique", i, t)
		}
		seen[t] = true
	}
	if u, err := url.Parse(s.UpstreamURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("UpstreamURL %q is not an http(s) URL with a host; give the upstream's MCP endpoint as the relay reaches it, e.g. http://127.0.0.1:8765/mcp", s.UpstreamURL)
	}
	if s.Name != strings.TrimSpace(s.Name) || len(s.Name) > 200 {
		bad("Name %q must have no surrounding spaces and at most 200 bytes", s.Name)
	}
	if needSecret && len(s.Secret) == 0 {
		bad("Secret is empty; set it (e.g. 32 random bytes) and give the same secret to the load generators, which derive tokens with relayseed.Token")
	}
	return errors.Join(errs...)
}

// ForUsers returns the spec with enough users per workspace for n users in
// all (at least n), the other fields kept: the population for a load test
// whose top level is n modeled users.
func (s Spec) ForUsers(n int) Spec {
	w := s.Workspaces
	if w <= 0 {
		w = DefaultWorkspaces
	}
	s.UsersPerWorkspace = max(1, (n+w-1)/w)
	return s
}

// Hash returns the hex SHA-256 (first 16 bytes) of the normalized spec
// without its Secret, and of the generator's version: the value recorded in
// seed_marker.spec_hash.
func (s Spec) Hash() string {
	n := s.normalized()
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nname=%q\nworkspaces=%d\nusers_per_workspace=%d\nconnectors_per_user=%d\n",
		generatorVersion, n.Name, n.Workspaces, n.UsersPerWorkspace, n.ConnectorsPerUser)
	b.WriteString("tools=")
	for _, t := range n.Tools {
		b.WriteString(strconv.Quote(t))
		b.WriteByte(',')
	}
	fmt.Fprintf(&b, "\nupstream_url=%q\nusage_rows=%d\nevents_rows=%d\ndays=%d\nend_us=%d\nseed=%d\n",
		n.UpstreamURL, n.UsageRows, n.EventsRows, n.Days, n.End.UnixMicro(), n.Seed)
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}

// String describes the spec in one line, without the secret (or any
// password in UpstreamURL).
func (s Spec) String() string {
	tools := fmt.Sprintf("%d", len(s.Tools))
	if s.Tools == nil {
		tools = "default"
	}
	secret := "unset"
	if len(s.Secret) > 0 {
		secret = s.Secret.String()
	}
	end := "default"
	if !s.End.IsZero() {
		end = s.End.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("relayseed.Spec{Name:%q Workspaces:%d UsersPerWorkspace:%d ConnectorsPerUser:%d Tools:%s UpstreamURL:%q UsageRows:%d EventsRows:%d Days:%d End:%s Seed:%d Secret:%s}",
		s.Name, s.Workspaces, s.UsersPerWorkspace, s.ConnectorsPerUser, tools, seed.RedactURL(s.UpstreamURL),
		s.UsageRows, s.EventsRows, s.Days, end, s.Seed, secret)
}

// Format writes String for every verb, so no verb prints the secret.
func (s Spec) Format(f fmt.State, _ rune) { fmt.Fprint(f, s.String()) }
