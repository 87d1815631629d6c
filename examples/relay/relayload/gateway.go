package relayload

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/offstack"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// KindDashboard is the kind of a dashboard page view, which a Gateway
// workload records besides the MCP kinds (mcp.KindInitialize,
// mcp.KindListTools, mcp.KindCallTool) and the sse kinds of each user's
// notification stream.
const KindDashboard = "dashboard"

// Gateway is the production-calibrated workload of an MCP gateway's users,
// as the published gateway harness models them:
//
//   - each user holds one notification stream for the whole run;
//   - calls arrive in bursts: several calls seconds apart (median 6 s inside
//     a burst), then quiet minutes, about 90 s between calls on average;
//   - 1% of users are bots that call continuously;
//   - users periodically reconnect (initialize + tools/list) and re-list
//     tools between calls; 5% of calls come with a dashboard page view;
//   - every call the gateway completed (a tool error included) must be
//     announced by one event on the user's stream within DeliveryTimeout:
//     one sse.KindDelivery sample per call, OK with the wait when the
//     event arrives, AppError when it has not (see sse.Stream.Expect).
//
// The upstream's latency, tool-error share and response sizes are the mock
// upstream's to model. Zero fields take these defaults; Users returns the
// loadtest workload.
type Gateway struct {
	// URL is the gateway's MCP endpoint, e.g. "https://127.0.0.1:8443/mcp".
	URL string
	// DashboardURL is fetched with a share of calls; empty disables views.
	DashboardURL string
	// HTTP sends every request; share one client between all users.
	HTTP *httpc.Client
	// Token returns modeled user i's bearer token.
	Token func(user int) string
	// ProtocolVersion is the MCP revision; empty means the default.
	// mcp.StatelessVersion (or later) drives the stateless era: server/discover
	// in place of the handshake and a subscriptions/listen stream in place
	// of the GET stream, the workload otherwise the same.
	ProtocolVersion string
	// Gaps are a human user's gaps between calls; the zero value means the
	// calibrated bursts scaled to MeanGap: dist.CalibratedBursts(6s, 20s,
	// 5 calls, 90s) by default.
	Gaps dist.Bursts
	// MeanGap is a human user's mean gap between calls when Gaps is zero:
	// the calibrated bursts (a median of 6 s inside a burst, 90 s on
	// average) scaled to it, so that a short run keeps their shape; 0
	// means 90 s.
	MeanGap time.Duration
	// BotShare is the share of users that are bots; default 0.01, and a
	// negative value means none.
	BotShare float64
	// BotGap is a bot's gap between calls; default 2 s ± 1 s.
	BotGap dist.Dist[time.Duration]
	// Reconnect is the mean time between one user's reconnects; default
	// 10 minutes; negative disables them.
	Reconnect time.Duration
	// Relist is the share of calls preceded by a tools/list; default 0.1.
	Relist float64
	// Dashboard is the share of calls followed by a dashboard view;
	// default 0.05.
	Dashboard float64
	// NoStream leaves out the held notification stream.
	NoStream bool
	// DeliveryTimeout is how long a completed call's event may take to
	// reach the user's stream before it is judged missing; zero means
	// sse.DefaultDeliveryTimeout (10 s). A negative value disables the
	// check: the stream would judge only at Close, after the user's
	// context ended, when the user keeps no samples.
	DeliveryTimeout time.Duration
	// Arguments returns the arguments of a call; nil sends {"query": "…"}.
	Arguments func(u *loadtest.User, tool string) any
	// ClientAddrs has every user send its own client address,
	// httpc.ClientAddr(user), as X-Forwarded-For on its requests and its
	// stream, as users behind a load balancer arrive from many addresses
	// (a per-client rate limiter sees many clients, not one). Check first
	// that the target believes it: httpc.CheckForwardedFor.
	ClientAddrs bool
	// Idle users connect (initialize and tools/list), open their stream
	// and then hold it without a call until the run ends: what an idle
	// connected user costs the gateway.
	Idle bool
}

// Kinds returns every kind the workload records.
func (g *Gateway) Kinds() []string {
	ks := []string{mcp.KindInitialize, mcp.KindListTools, mcp.KindCallTool}
	if g.DashboardURL != "" {
		ks = append(ks, KindDashboard)
	}
	if !g.NoStream {
		ks = append(ks, sse.KindConnect, sse.KindFirstEvent, sse.DefaultFanoutKind, sse.KindStream, sse.KindHealth, sse.KindDelivery, sse.KindMalformed)
	}
	return ks
}

func (g Gateway) withDefaults() (Gateway, error) {
	if g.Gaps.InBurst == nil {
		mean := g.MeanGap
		if mean <= 0 {
			mean = 90 * time.Second
		}
		scale := mean.Seconds() / 90
		b, err := dist.CalibratedBursts(dist.Seconds(6*scale), dist.Seconds(20*scale), 5, mean)
		if err != nil {
			return g, fmt.Errorf("relayload: Gateway.MeanGap %v: %w", g.MeanGap, err)
		}
		g.Gaps = b
	}
	if g.BotShare == 0 {
		g.BotShare = 0.01
	}
	if g.BotGap == nil {
		g.BotGap = dist.Fixed[time.Duration]{Value: 2 * time.Second, Jitter: time.Second}
	}
	if g.Reconnect == 0 {
		g.Reconnect = 10 * time.Minute
	}
	if g.Relist == 0 {
		g.Relist = 0.1
	}
	if g.Dashboard == 0 {
		g.Dashboard = 0.05
	}
	if g.Arguments == nil {
		g.Arguments = func(u *loadtest.User, tool string) any {
			return map[string]any{"query": fmt.Sprintf("user %d asks %s", u.ID, tool)}
		}
	}
	var errs []error
	if g.URL == "" {
		errs = append(errs, errors.New("relayload: Gateway.URL is empty; give the gateway's MCP endpoint"))
	}
	if g.HTTP == nil {
		errs = append(errs, errors.New("relayload: Gateway.HTTP is nil; give an httpc.Client shared by all users"))
	}
	if g.Token == nil {
		errs = append(errs, errors.New("relayload: Gateway.Token is nil; give the function that returns user i's token"))
	}
	for name, v := range map[string]float64{"BotShare": g.BotShare, "Relist": g.Relist, "Dashboard": g.Dashboard} {
		if v > 1 {
			errs = append(errs, fmt.Errorf("relayload: Gateway.%s is %v; give a share in [0, 1]", name, v))
		}
	}
	return g, errors.Join(errs...)
}

// Users returns the workload: one modeled user per level unit, each running
// the gateway user's behaviour.
func (g *Gateway) Users() (*loadtest.Users, error) {
	cfg, err := g.withDefaults()
	if err != nil {
		return nil, err
	}
	// Each user holds at most one request in flight through the shared
	// client (its stream has a connection of its own): the plan is checked
	// against the client's pool before the run starts.
	if g.DashboardURL != "" {
		// Checked once here: each view prepares its request (viewDashboard).
		if _, err := g.HTTP.Prepare("GET", g.DashboardURL, cfg.dashboardHeader(0), nil); err != nil {
			return nil, fmt.Errorf("relayload: Gateway.DashboardURL: %w", err)
		}
	}
	names := &toolLists{}
	// One stream group serves every user, each stream recording into its
	// user: a group per user would repeat the configuration 10,000 times.
	var streams *sse.Group
	if !g.NoStream {
		scfg := mcp.NotificationConfig(g.HTTP, g.URL, nil)
		if mcp.Stateless(g.ProtocolVersion) {
			scfg = mcp.ListenConfig(g.HTTP, g.URL, g.ProtocolVersion, nil)
		}
		scfg.DeliveryTimeout = g.DeliveryTimeout
		if streams, err = sse.NewGroup(scfg); err != nil {
			return nil, fmt.Errorf("mcp: Gateway streams: %w", err)
		}
	}
	behave := func(u *loadtest.User) { cfg.behave(u, names, streams) }
	return &loadtest.Users{Kinds: g.Kinds(), Behavior: behave, Limiters: []loadtest.Limiter{g.HTTP}}, nil
}

// gatewayUser is one modeled user's state.
type gatewayUser struct {
	g      *Gateway
	u      *loadtest.User
	c      *mcp.Client
	names  *toolLists
	stream *sse.Stream
	// The user's goroutine runs its acts on off (see live); these are
	// their state between two acts.
	off           offstack.Runner
	bot           bool
	gap           time.Duration
	nextReconnect time.Time
	// tools holds only the names of the user's tools, the one thing it
	// uses, in a list shared by every user that listed the same tools: a
	// full list of a hundred tools with their schemas is tens of KiB per
	// user.
	tools []string
}

// behave is one gateway user's life; names keeps the tool names of the
// users' lists, shared between them. The user's goroutine only sleeps
// between acts: what it does runs off its stack (offstack.Run), so that
// the goroutine keeps its starting stack while it sleeps, which is most
// of the time.
func (g *Gateway) behave(u *loadtest.User, names *toolLists, streams *sse.Group) {
	var gu *gatewayUser
	offstack.Run(func() { gu = g.start(u, names, streams) })
	if gu == nil {
		return
	}
	if gu.stream != nil {
		defer offstack.Run(func() { gu.stream.Close() })
	}
	u.Ready() // connected: its start-up work is done
	if g.Idle {
		<-u.Context().Done()
		return
	}
	gu.live(gu.step)
}

// start makes the user's client, connects it (retrying) and opens its
// stream in streams (nil: none); nil when the user must stop.
func (g *Gateway) start(u *loadtest.User, names *toolLists, streams *sse.Group) *gatewayUser {
	var header []httpc.Header
	if g.ClientAddrs {
		header = []httpc.Header{httpc.ForwardedFor(u.ID)}
	}
	c, err := mcp.New(g.HTTP, mcp.Options{URL: g.URL, Token: g.Token(u.ID), ProtocolVersion: g.ProtocolVersion, Header: header})
	if err != nil {
		u.Record(mcp.KindInitialize, 0, loadtest.Response{Outcome: loadtest.ProtocolError, Err: err})
		return nil
	}
	gu := &gatewayUser{g: g, u: u, c: c, names: names}
	// A user that cannot connect retries, as a client would, after a pause.
	for !gu.connect() {
		if !u.Sleep(dist.Fixed[time.Duration]{Value: 5 * time.Second, Jitter: 2 * time.Second}.Sample(u.Rand)) {
			return nil
		}
	}
	if streams != nil {
		gu.stream = streams.OpenFor(u.Context(), u, c.StreamHeaders()...)
	}
	return gu
}

// connect initializes the session and lists the tools.
func (gu *gatewayUser) connect() bool {
	u, c := gu.u, gu.c
	if u.Do(mcp.KindInitialize, c.Initialize).Outcome != loadtest.OK {
		return false
	}
	r := u.Do(mcp.KindListTools, func(ctx context.Context) loadtest.Response {
		ts, r := c.ListTools(ctx)
		if r.Outcome == loadtest.OK {
			gu.tools = gu.names.of(ts)
		}
		return r
	})
	return r.Outcome == loadtest.OK
}

// live is the user's bursts of calls until it stops: a gap, then step
// (gu.step: act, and draw the next gap) off the user's goroutine. The
// goroutine only sleeps, and allocates nothing, so that it keeps its
// starting stack. The first gap is what is left of the gap a random
// instant falls in: the user joins its bursts and quiet spells at a random
// point, as a user of a long-running gateway would be found, so that users
// started together are not in phase (all inside a burst at once, then
// quiet for minutes).
//
// Its reconnect is found at a random point too. A reconnect falls due an
// exponential time after the act that made the last one, then waits for
// the next act; at the act before the random instant it was not yet due
// (else that act would have reconnected), so it is due now when its
// exponential, drawn from that act on, fell within the part of the gap
// that has elapsed — 40% of humans at the calibrated bursts. Without it,
// every user's first reconnect came minutes into the run, and the hold's
// kind mix drifted towards reconnects.
func (gu *gatewayUser) live(step func()) {
	g, u := gu.g, gu.u
	gu.bot = g.BotShare > 0 && u.Rand.Float64() < g.BotShare
	length := dist.LengthBiased(gu.gaps(), u.Rand)
	gu.gap = time.Duration(u.Rand.Float64() * float64(length))
	// The timer, drawn from the act before, elapsed into the gap.
	if next := g.reconnectAfter(u); !next.IsZero() {
		gu.nextReconnect = next.Add(gu.gap - length)
		if now := time.Now(); gu.nextReconnect.Before(now) {
			gu.nextReconnect = now // due since then, waiting for the next act
		}
	}
	for u.Sleep(gu.gap) {
		gu.off.Run(step)
	}
}

// step is what the user does after a gap, off its goroutine: act, then
// draw the next gap.
func (gu *gatewayUser) step() {
	gu.act()
	gu.nextGap()
}

// reconnectDue reports whether the user's reconnect is due, and if so
// draws the next one.
func (gu *gatewayUser) reconnectDue() bool {
	if gu.nextReconnect.IsZero() || !time.Now().After(gu.nextReconnect) {
		return false
	}
	gu.nextReconnect = gu.g.reconnectAfter(gu.u)
	return true
}

// nextGap draws the gap before the user's next act.
func (gu *gatewayUser) nextGap() { gu.gap = gu.gaps().Sample(gu.u.Rand) }

// gaps is the distribution of the user's gaps between acts: a bot's or a
// human's bursts (by pointer: boxing the struct would allocate each time).
func (gu *gatewayUser) gaps() dist.Dist[time.Duration] {
	if gu.bot {
		return gu.g.BotGap
	}
	return &gu.g.Gaps
}

// act is what the user does after a gap: a reconnect when it is due or
// else, sometimes, a tools/list; then a call, and sometimes a dashboard
// view.
func (gu *gatewayUser) act() {
	g, u, c := gu.g, gu.u, gu.c
	switch {
	case gu.reconnectDue():
		gu.connect()
	case u.Rand.Float64() < g.Relist:
		u.Do(mcp.KindListTools, func(ctx context.Context) loadtest.Response { _, r := c.ListTools(ctx); return r })
	}
	if len(gu.tools) == 0 {
		return
	}
	tool := gu.tools[u.Rand.IntN(len(gu.tools))]
	args := g.Arguments(u, tool)
	r := u.Do(mcp.KindCallTool, func(ctx context.Context) loadtest.Response { _, r := c.CallTool(ctx, tool, args); return r })
	// Every call the gateway completed, a tool error included, is one
	// event on the user's stream: a pending observation of the step the
	// call was made in, judged within DeliveryTimeout. A call the user's
	// departure cut short was not recorded, so nothing is expected of it.
	var te *mcp.ToolError
	if gu.stream != nil && u.Context().Err() == nil && (r.Outcome == loadtest.OK || errors.As(r.Err, &te)) {
		gu.stream.Expect(1)
	}
	if g.DashboardURL != "" && !g.Idle && u.Rand.Float64() < g.Dashboard {
		gu.viewDashboard()
	}
}

// viewDashboard fetches the dashboard page as the user. The request is
// prepared for each view, not kept: one in twenty calls comes with a view,
// and a prepared request held by every user would be half a KiB each.
func (gu *gatewayUser) viewDashboard() {
	g, u := gu.g, gu.u
	req, err := g.HTTP.Prepare("GET", g.DashboardURL, g.dashboardHeader(u.ID), nil)
	if err != nil {
		u.Record(KindDashboard, 0, loadtest.Response{Outcome: loadtest.ProtocolError, Err: err})
		return
	}
	u.Do(KindDashboard, g.HTTP.Func(req))
}

// dashboardHeader is user id's dashboard request header: its token and,
// with ClientAddrs, its client address.
func (g *Gateway) dashboardHeader(id int) []httpc.Header {
	h := []httpc.Header{{Name: "Authorization", Value: "Bearer " + g.Token(id)}}
	if g.ClientAddrs {
		h = append(h, httpc.ForwardedFor(id))
	}
	return h
}

// toolLists interns the tool-name lists of a gateway's users: one copy of
// each distinct list (users of a population see the same few), up to
// maxToolLists of them; past that a user keeps a copy of its own.
type toolLists struct {
	mu    sync.Mutex
	lists map[string][]string // by the names, each followed by a NUL
}

const maxToolLists = 1024

// of returns the names of tools, shared with every other user that listed
// the same names in the same order.
func (t *toolLists) of(tools []mcp.Tool) []string {
	if len(tools) == 0 {
		return nil
	}
	n := 0
	for _, tl := range tools {
		n += len(tl.Name) + 1
	}
	key := make([]byte, 0, n)
	for _, tl := range tools {
		key = append(key, tl.Name...)
		key = append(key, 0)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.lists[string(key)]; ok {
		return l
	}
	// The names are cut from the key, one allocation for the whole list,
	// so that they keep nothing of the decoded answer alive.
	all := string(key)
	names := make([]string, len(tools))
	off := 0
	for i, tl := range tools {
		names[i] = all[off : off+len(tl.Name)]
		off += len(tl.Name) + 1
	}
	if len(t.lists) < maxToolLists {
		if t.lists == nil {
			t.lists = map[string][]string{}
		}
		t.lists[all] = names
	}
	return names
}

func (g *Gateway) reconnectAfter(u *loadtest.User) time.Time {
	if g.Reconnect < 0 {
		return time.Time{}
	}
	return time.Now().Add(dist.Exponential[time.Duration]{Mean: g.Reconnect}.Sample(u.Rand))
}
