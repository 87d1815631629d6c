// Package deskload models the desk's agents for a load test (seed 004's
// agent script): each modeled user is one signed-in agent working its inbox
// through the same requests the agent app sends, with the live stream
// (Live) or the older polling client (Poll). Agents.Users returns the
// loadtest workload.
package deskload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// The kinds an agent records, besides the sse kinds of its live stream.
const (
	KindInbox    = "inbox"    // GET /api/inbox: a view's first page and the counts
	KindCounts   = "counts"   // GET /api/counts: the sidebar again
	KindCase     = "case"     // GET /api/cases/{id}: the case page
	KindPresence = "presence" // POST /api/cases/{id}/presence: the open case's heartbeat
	KindNote     = "note"     // POST /api/cases/{id}/notes
	KindReply    = "reply"    // POST /api/cases/{id}/replies
	KindSearch   = "search"   // GET /api/search
)

// The clients an agent runs.
const (
	// Live holds the live stream and counts the sidebar again when it says
	// something changed, and every Recount.
	Live = "live"
	// Poll is the app before live updates: it reloads the inbox every
	// Refresh and sends the presence heartbeat more often.
	Poll = "poll"
)

// The views an agent opens its inbox on, one each, drawn at random.
var views = []string{"mine", "unassigned", "open"}

// Agents is the workload of seed 004's agents. Each modeled user i is
// seeded agent i mod Agents + 1, signed in with Token, and:
//
//   - opens the inbox on one of three views (mine, unassigned, all open);
//   - Live: holds the live stream and asks the counts again when it says
//     something changed (at most one recount in flight, changes meanwhile
//     folded into the next) and every Recount; Poll: reloads the inbox
//     every Refresh;
//   - every Between (5 to 20 s) opens a case from its list, after a search
//     in SearchShare of cases;
//   - stays on it for Stay (30 to 120 s), sending the presence heartbeat
//     on opening and every Heartbeat (20 s; 8 s with Poll);
//   - after a case, adds an internal note in NoteShare of cases and sends
//     an email reply in ReplyShare.
//
// Each agent starts at a random instant of that working cycle — on a case
// or on the inbox, part of the way through, its periodic reload or
// recount due at a random point of its period — so that agents started
// together are not in phase and a hold measures the steady state.
//
// Every duration is multiplied by Pace, so that a short run keeps the
// workload's shape at a higher rate. Zero fields take the seed's values.
// Users.Timeout (see Users) makes any answer slower than 30 s an error,
// as the seed counts them.
type Agents struct {
	// URL is the desk's base URL as agents reach it, e.g. Caddy's
	// "https://127.0.0.1:8443".
	URL string
	// HTTP sends every request; share one client between all agents. The
	// live streams use its dialer (TLS roots, source addresses).
	HTTP *httpc.Client
	// Token returns the session token of seeded agent a (from 1):
	// deskseed's Population.Token.
	Token func(agent int64) string
	// Agents is the number of seeded agents the users are spread over.
	Agents int
	// Client is Live (the default) or Poll.
	Client string
	// Between is the time on the inbox before the next case; default
	// uniform 5–20 s.
	Between dist.Dist[time.Duration]
	// Stay is the time on a case; default uniform 30–120 s.
	Stay dist.Dist[time.Duration]
	// Heartbeat is the presence heartbeat's period on an open case;
	// default 20 s, 8 s with Poll.
	Heartbeat time.Duration
	// Recount is the live client's periodic recount; default 5 minutes.
	Recount time.Duration
	// Refresh is the poll client's inbox reload; default 60 s.
	Refresh time.Duration
	// SearchShare, NoteShare and ReplyShare are the shares of cases
	// preceded by a search, followed by a note, followed by a reply;
	// defaults 1/10, 1/10 and 1/33. A negative share means never.
	SearchShare, NoteShare, ReplyShare float64
	// Pace multiplies every duration above; default 1.
	Pace float64
	// Timeout is the longest an answer may take before it is an error;
	// default 30 s.
	Timeout time.Duration
}

// Kinds returns every kind the workload records.
func (a *Agents) Kinds() []string {
	ks := []string{KindInbox, KindCounts, KindCase, KindPresence, KindNote, KindReply, KindSearch}
	if a.Client != Poll {
		ks = append(ks, sse.KindConnect, sse.KindFirstEvent, sse.DefaultFanoutKind, sse.KindStream, sse.KindHealth, sse.KindMalformed)
	}
	return ks
}

func (a Agents) withDefaults() (Agents, error) {
	var errs []error
	if a.URL == "" {
		errs = append(errs, errors.New("deskload: Agents.URL is empty; give the desk's base URL as agents reach it (Caddy's)"))
	}
	if a.HTTP == nil {
		errs = append(errs, errors.New("deskload: Agents.HTTP is nil; give an httpc.Client shared by all agents"))
	}
	if a.Token == nil {
		errs = append(errs, errors.New("deskload: Agents.Token is nil; give the seeded population's Token"))
	}
	if a.Agents <= 0 {
		errs = append(errs, fmt.Errorf("deskload: Agents.Agents is %d; give the number of seeded agents", a.Agents))
	}
	switch a.Client {
	case "":
		a.Client = Live
	case Live, Poll:
	default:
		errs = append(errs, fmt.Errorf("deskload: Agents.Client is %q; give %q or %q", a.Client, Live, Poll))
	}
	if a.Pace == 0 {
		a.Pace = 1
	}
	if a.Pace < 0 {
		errs = append(errs, fmt.Errorf("deskload: Agents.Pace is %v; give a positive factor", a.Pace))
	}
	paced := func(d time.Duration) time.Duration { return time.Duration(float64(d) * a.Pace) }
	if a.Between == nil {
		a.Between = dist.Uniform[time.Duration]{Min: paced(5 * time.Second), Max: paced(20 * time.Second)}
	}
	if a.Stay == nil {
		a.Stay = dist.Uniform[time.Duration]{Min: paced(30 * time.Second), Max: paced(120 * time.Second)}
	}
	def := func(d *time.Duration, v time.Duration, name string) {
		switch {
		case *d == 0:
			*d = paced(v)
		case *d < 0:
			errs = append(errs, fmt.Errorf("deskload: Agents.%s is %v; give a positive duration or 0 for the seed's", name, *d))
		}
	}
	hb := 20 * time.Second
	if a.Client == Poll {
		hb = 8 * time.Second
	}
	def(&a.Heartbeat, hb, "Heartbeat")
	def(&a.Recount, 5*time.Minute, "Recount")
	def(&a.Refresh, time.Minute, "Refresh")
	if a.Timeout == 0 {
		a.Timeout = 30 * time.Second
	}
	share := func(v *float64, d float64, name string) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0
		case *v > 1:
			errs = append(errs, fmt.Errorf("deskload: Agents.%s is %v; give a share in [0, 1]", name, *v))
		}
	}
	share(&a.SearchShare, 0.1, "SearchShare")
	share(&a.NoteShare, 0.1, "NoteShare")
	share(&a.ReplyShare, 1.0/33, "ReplyShare")
	return a, errors.Join(errs...)
}

// Users returns the workload: one modeled agent per level unit. Each holds
// at most two requests in flight through the shared client (its work and
// a recount or reload); its live stream has a connection of its own.
func (a *Agents) Users() (*loadtest.Users, error) {
	cfg, err := a.withDefaults()
	if err != nil {
		return nil, err
	}
	base := strings.TrimSuffix(cfg.URL, "/")
	w := &workload{cfg: cfg}
	// One GET and one POST serve every request: each send names its path.
	if w.get, err = cfg.HTTP.Prepare("GET", base+"/api/me", nil, nil); err != nil {
		return nil, fmt.Errorf("deskload: Agents.URL: %w", err)
	}
	if w.post, err = cfg.HTTP.Prepare("POST", base+"/api/me", []httpc.Header{{Name: "Content-Type", Value: "application/json"}}, nil); err != nil {
		return nil, fmt.Errorf("deskload: Agents.URL: %w", err)
	}
	if cfg.Client == Live {
		scfg := sse.Config{URL: base + "/api/stream", Dialer: cfg.HTTP.Dialer(),
			KeepaliveInterval: 15 * time.Second, OnEvent: w.onEvent}
		if w.streams, err = sse.NewGroup(scfg); err != nil {
			return nil, fmt.Errorf("deskload: live streams: %w", err)
		}
	}
	return &loadtest.Users{Kinds: cfg.Kinds(), Behavior: w.behave, Timeout: cfg.Timeout,
		Limiters: []loadtest.Limiter{cfg.HTTP}, InFlightPerUser: 2}, nil
}

// workload is a running Agents: the requests every agent sends, prepared
// once (each send names its path and token), and the live streams.
type workload struct {
	cfg       Agents
	get, post *httpc.Request
	streams   *sse.Group
	agents    sync.Map // *sse.Stream → *agent, for onEvent
}

// agent is one modeled agent's state.
type agent struct {
	w     *workload
	u     *loadtest.User
	auth  httpc.Header
	view  string
	call  httpc.Call // the agent's own goroutine's
	bcall httpc.Call // the recount or reload goroutine's
	// changed carries the stream's news to the recount goroutine: one
	// pending signal, later ones folded into it.
	changed chan struct{}

	mu    sync.Mutex
	cases []listed // the inbox's last page
}

// listed is a case of the inbox as an agent keeps it.
type listed struct {
	id   int64
	word string // a word of its subject, to search for
}

// onEvent hands a change on an agent's stream to its recount goroutine.
func (w *workload) onEvent(s *sse.Stream, ev sse.Event, _ time.Time) {
	if t := string(ev.Type); t != "change" && t != "resync" {
		return
	}
	if v, ok := w.agents.Load(s); ok {
		select {
		case v.(*agent).changed <- struct{}{}:
		default:
		}
	}
}

// behave is one agent's working life until it stops.
func (w *workload) behave(u *loadtest.User) {
	cfg := w.cfg
	ag := &agent{w: w, u: u, view: views[u.Rand.IntN(len(views))], changed: make(chan struct{}, 1),
		auth: httpc.Header{Name: "Authorization", Value: "Bearer " + cfg.Token(int64(u.ID%cfg.Agents+1))}}
	ag.call.Header = []httpc.Header{ag.auth}
	ag.bcall.Header = []httpc.Header{ag.auth}
	// The app's first screen: the inbox, retried after a pause as the app
	// would when the desk does not answer.
	for !ag.inbox(&ag.call) {
		if !u.Sleep(dist.Fixed[time.Duration]{Value: 5 * time.Second, Jitter: 2 * time.Second}.Sample(u.Rand)) {
			return
		}
	}
	// The agent is found at a random instant of its working day, as the
	// agents of a desk that has been open for hours are: its periodic
	// reload or recount is due at a random point of its period, and it is
	// on a case (with the share of time cases take) or on its inbox, part
	// of the way through either. Agents started together are then not in
	// phase: no surge of case openings at the start of a hold.
	firstPeriodic := dist.Residual[time.Duration](dist.Fixed[time.Duration]{Value: cfg.Refresh}, u.Rand)
	if cfg.Client == Live {
		firstPeriodic = dist.Residual[time.Duration](dist.Fixed[time.Duration]{Value: cfg.Recount}, u.Rand)
		s := w.streams.OpenFor(u.Context(), u, ag.auth)
		w.agents.Store(s, ag)
		defer func() {
			s.Close()
			w.agents.Delete(s)
		}()
		u.Go(func(ctx context.Context) { ag.recount(ctx, firstPeriodic) })
	} else {
		u.Go(func(context.Context) { ag.poll(firstPeriodic) })
	}
	stay, between := dist.Mean(cfg.Stay), dist.Mean(cfg.Between)
	pause := dist.Residual(cfg.Between, u.Rand)
	if u.Rand.Float64()*(stay+between) < stay {
		length := dist.LengthBiased(cfg.Stay, u.Rand)
		left := time.Duration(u.Rand.Float64() * float64(length))
		if !ag.resume(length-left, left) {
			return
		}
		pause = cfg.Between.Sample(u.Rand)
	}
	for u.Sleep(pause) {
		if !ag.work() {
			return
		}
		pause = cfg.Between.Sample(u.Rand)
	}
}

// work is one case: a search first sometimes, the case page, the stay with
// its heartbeats, then sometimes a note or a reply. It reports whether the
// agent goes on.
func (ag *agent) work() bool {
	cfg, u := ag.w.cfg, ag.u
	c, ok := ag.pick()
	if !ok { // an empty view: the agent looks at all open cases instead
		ag.view = "open"
		ag.inbox(&ag.call)
		return true
	}
	if cfg.SearchShare > 0 && u.Rand.Float64() < cfg.SearchShare && c.word != "" {
		ag.send(&ag.call, KindSearch, ag.w.get, "/api/search?q="+url.QueryEscape(c.word), nil)
	}
	casePath := fmt.Sprintf("/api/cases/%d", c.id)
	if ag.send(&ag.call, KindCase, ag.w.get, casePath, nil).Outcome != loadtest.OK {
		return u.Context().Err() == nil
	}
	return ag.stay(casePath, 0, cfg.Stay.Sample(u.Rand))
}

// resume is the rest of a case the agent was found on, elapsed into it
// with left to go: the heartbeats still due, then the note or reply.
func (ag *agent) resume(elapsed, left time.Duration) bool {
	c, ok := ag.pick()
	if !ok {
		return ag.u.Context().Err() == nil
	}
	return ag.stay(fmt.Sprintf("/api/cases/%d", c.id), elapsed, left)
}

// stay is the time on an open case from elapsed into it, left to go: the
// presence heartbeat on opening and every Heartbeat since, then sometimes
// a note or a reply. It reports whether the agent goes on.
func (ag *agent) stay(casePath string, elapsed, left time.Duration) bool {
	cfg, u := ag.w.cfg, ag.u
	if since := elapsed % cfg.Heartbeat; since > 0 { // between two heartbeats
		d := min(cfg.Heartbeat-since, left)
		if !u.Sleep(d) {
			return false
		}
		left -= d
	}
	for left > 0 {
		ag.send(&ag.call, KindPresence, ag.w.post, casePath+"/presence", []byte("{}"))
		d := min(cfg.Heartbeat, left)
		if !u.Sleep(d) {
			return false
		}
		left -= d
	}
	if cfg.NoteShare > 0 && u.Rand.Float64() < cfg.NoteShare {
		ag.send(&ag.call, KindNote, ag.w.post, casePath+"/notes", noteBody)
	}
	if cfg.ReplyShare > 0 && u.Rand.Float64() < cfg.ReplyShare {
		ag.send(&ag.call, KindReply, ag.w.post, casePath+"/replies", replyBody)
	}
	return u.Context().Err() == nil
}

var (
	noteBody  = []byte(`{"body":"Checked with the requester's account team; waiting on their answer."}`)
	replyBody = []byte(`{"body":"Thank you for your message. We are looking into it and will come back to you shortly."}`)
)

// recount is the live client's sidebar: the counts again when the stream
// says something changed, and every Recount, the first after first.
func (ag *agent) recount(ctx context.Context, first time.Duration) {
	t := time.NewTimer(first)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ag.changed:
		case <-t.C:
		}
		ag.send(&ag.bcall, KindCounts, ag.w.get, "/api/counts", nil)
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(ag.w.cfg.Recount)
	}
}

// poll is the older client's inbox reload every Refresh, the first after
// first.
func (ag *agent) poll(first time.Duration) {
	for pause := first; ag.u.Sleep(pause); pause = ag.w.cfg.Refresh {
		ag.inbox(&ag.bcall)
	}
}

// inbox loads the agent's view and keeps its cases; it reports whether it
// got them.
func (ag *agent) inbox(call *httpc.Call) bool {
	call.KeepBody = true
	r := ag.send(call, KindInbox, ag.w.get, "/api/inbox?view="+ag.view, nil)
	// Only the inbox's body is read; the agent keeps no buffer of it, so
	// that thousands of agents hold a few case ids each, not a page.
	body := call.RespBody
	call.KeepBody, call.RespBody = false, nil
	if r.Outcome != loadtest.OK {
		return false
	}
	var page struct {
		Cases []struct {
			ID      int64  `json:"id"`
			Subject string `json:"subject"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		ag.u.Record(KindInbox, 0, loadtest.Response{Outcome: loadtest.ProtocolError, Err: fmt.Errorf("deskload: the inbox is not the desk's JSON: %w", err)})
		return false
	}
	cases := make([]listed, len(page.Cases))
	for i, c := range page.Cases {
		cases[i] = listed{id: c.ID, word: firstWord(c.Subject)}
	}
	ag.mu.Lock()
	ag.cases = cases
	ag.mu.Unlock()
	return true
}

// pick draws a case from the agent's list.
func (ag *agent) pick() (listed, bool) {
	ag.mu.Lock()
	defer ag.mu.Unlock()
	if len(ag.cases) == 0 {
		return listed{}, false
	}
	return ag.cases[ag.u.Rand.IntN(len(ag.cases))], true
}

// send issues one request of kind as the agent and records it.
func (ag *agent) send(call *httpc.Call, kind string, r *httpc.Request, path string, body []byte) loadtest.Response {
	call.Path, call.Body = path, body
	return ag.u.Do(kind, func(ctx context.Context) loadtest.Response { return ag.w.cfg.HTTP.Exchange(ctx, r, call) })
}

// firstWord returns the first word of s of three letters or more, lower
// case: what an agent types to find a case like it.
func firstWord(s string) string {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if len([]rune(f)) >= 3 {
			return strings.ToLower(f)
		}
	}
	return ""
}
