//go:build load

package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/orch/orchload"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/dist"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/prom"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// The kinds of the orchestrator run: the readers' pages, the approval, and
// each mission's time from approval to its end (observed on its board).
const (
	kindMissionList = "missions"
	kindMissionPage = "mission"
	kindInbox       = "inbox"
	kindScoreboard  = "scoreboard"
	kindBudgets     = "budgets"
	kindApprove     = "approve"
	kindMissionDone = "mission_done"
)

// TestLoad_Orchestrator is an agent orchestrator's acceptance run (seed
// 002) on examples/orch: 125 missions of 4 tasks are created, and every
// mission's board opens its live event stream; then all are approved at
// once. A mission runs at most 4 tasks at a time, so 500 attempts run
// together on 8 runners of 64 slots, each calling a vendor stand-in (the
// mock upstream) that answers in about 12 s; meanwhile 20 readers load the
// missions list, mission pages, the inbox, the scoreboard and budgets in a
// loop, a second apart on average. Every board follows its stream until
// its mission is done.
//
// Bars (the seed's): API p95 (every reader request and the approval) under
// 300 ms; fan-out (an event written, with clock_timestamp(), to its
// receipt on a board) p95 under 1 s; every mission finishes within the
// hold; no request fails; every component up. Subtests: web=0, the API
// and the orchestrator in one process, and web=2, two web processes
// behind Caddy and one worker (the seed's LOAD_WEB). The report has API
// and fan-out percentiles per kind, missions finished and their time to
// finish, every process's CPU and memory, and PostgreSQL's transactions
// per second.
//
// Knobs: WEB (the subtests, "0,2"), MISSIONS, TASKS, PARALLEL, RUNNERS,
// SLOTS, READERS, THINK (a reader's mean pause), VENDOR (the vendor's
// delay), HOLD, SEED, LOADTEST_BACKEND. -short runs 12 missions on 2
// runners against a 1 s vendor, with the correctness bars only.
func TestLoad_Orchestrator(t *testing.T) {
	notDeployed(t, "starts its runners against its own mock vendor")
	k := loadtest.NewKnobs(t)
	for _, w := range strings.Split(k.String("WEB", "0,2", "0,2"), ",") {
		web, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || web < 0 || web == 1 {
			t.Fatalf("knob WEB=%q: give 0 (one process) or a number of web processes of at least 2, comma-separated", w)
		}
		t.Run("web="+strconv.Itoa(web), func(t *testing.T) { orchestrator(t, web) })
	}
}

func orchestrator(t *testing.T, web int) {
	k := loadtest.NewKnobs(t)
	missions, tasks := k.Int("MISSIONS", "125", "12", 1), k.Int("TASKS", "4", "4", 1)
	parallel := k.Int("PARALLEL", "4", "4", 1)
	runners, slots := k.Int("RUNNERS", "8", "2", 1), k.Int("SLOTS", "64", "32", 1)
	readers := k.Int("READERS", "20", "4", 0)
	think := k.Duration("THINK", "1s", "500ms")
	vendor := k.Duration("VENDOR", "12s", "1s")
	hold := k.Duration("HOLD", "60s", "20s")
	seed := k.Uint("SEED", "1", "1")
	k.Set("web", web)

	stack := startOrch(t, web, runners, slots, vendor)
	ids := createMissions(t, stack, missions, tasks, parallel)

	// A connection per user: the boards' streams have their own, but the
	// plan is checked against the users, every one of which may send.
	o := stack.ClientOptions()
	o.Timeout, o.MaxConnsPerHost = time.Minute, missions+readers+10
	hc, err := httpc.New(o)
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	run, err := newOrchRun(stack, hc, ids, readers, think)
	require.NoError(t, err)

	checks := []loadtest.Check{
		run.allFinished(),
		loadtest.FailuresBelow("", 0.001),
		stack.ComponentsUp(),
	}
	if !testing.Short() {
		checks = append(checks, loadtest.LatencyBelow(loadtest.AllRequests, 95, 300*time.Millisecond),
			loadtest.LatencyBelow(sse.DefaultFanoutKind, 95, time.Second))
	}
	res := loadtest.Test(t, stack.Scenario(loadtest.Scenario{
		Workload: run.users(), Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: float64(run.level()), Hold: hold}}},
		Checks: checks, Seed: seed, Headline: loadtest.AllRequests,
		Samplers: orchMetrics(stack), Params: k.Params(),
		Analyze: orchFindings, Drain: 5 * time.Second,
	}))
	for _, f := range res.Findings {
		t.Log(f)
	}
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}

// startOrch starts the orchestrator: web 0 is one process doing the API
// and the orchestration; otherwise web processes behind Caddy and one
// worker. Runners call the mock upstream's /echo, which answers after
// vendor. Every process may use both cores. extra options follow.
func startOrch(t *testing.T, web, runners, slots int, vendor time.Duration, extra ...fixtures.Option) *fixtures.Stack {
	api := orchload.Service()
	api.CPUs, api.Memory = "2", "2GiB"
	vendorURL := fmt.Sprintf("{{.UpstreamURL}}/echo?delay=%s&status=200&bytes=512", vendor)
	opts := []fixtures.Option{fixtures.WithService(orchload.Runner(runners, slots, vendorURL))}
	if web > 0 {
		api.Env["ORCH_ROLE"] = "web"
		opts = append(opts, fixtures.WithReplicas(web), fixtures.WithService(orchload.Worker()))
	}
	return fixtures.Start(t, append(append(opts, extra...), fixtures.WithTarget(api))...)
}

// createMissions creates n draft missions of tasks tasks in one batch and
// returns their ids.
func createMissions(t *testing.T, stack *fixtures.Stack, n, tasks, parallel int) []int64 {
	type task struct {
		Title  string `json:"title"`
		Prompt string `json:"prompt"`
	}
	type mission struct {
		Title       string `json:"title"`
		MaxParallel int    `json:"max_parallel"`
		Tasks       []task `json:"tasks"`
	}
	var batch struct {
		Missions []mission `json:"missions"`
	}
	for i := range n {
		m := mission{Title: fmt.Sprintf("mission %d", i+1), MaxParallel: parallel}
		for j := range tasks {
			m.Tasks = append(m.Tasks, task{Title: fmt.Sprintf("step %d", j+1), Prompt: fmt.Sprintf("Research and summarise part %d of topic %d.", j+1, i+1)})
		}
		batch.Missions = append(batch.Missions, m)
	}
	body, err := json.Marshal(batch)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", stack.URL+"/api/missions/batch", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := stack.HTTPClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode, "creating the missions")
	var out struct {
		Missions []struct {
			ID int64 `json:"id"`
		} `json:"missions"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Len(t, out.Missions, n)
	ids := make([]int64, n)
	for i, m := range out.Missions {
		ids[i] = m.ID
	}
	return ids
}

// orchRun is the run's users: one board per mission (users 0 to
// missions-1), then the readers, then the operator who approves every
// mission once every board has its stream.
type orchRun struct {
	stack   *fixtures.Stack
	hc      *httpc.Client
	ids     []int64
	readers int
	think   dist.Dist[time.Duration]
	boards  []*sse.Group
	pages   map[string]*httpc.Request
	approve *httpc.Request

	ready    atomic.Int64  // boards whose stream replayed its first event
	allReady chan struct{} // closed when every board is ready
	once     sync.Once
	approved atomic.Int64 // the approval's time, UnixNano; 0 before
	ends     []chan bool  // per board: the mission ended (true: done)
}

func newOrchRun(stack *fixtures.Stack, hc *httpc.Client, ids []int64, readers int, think time.Duration) (*orchRun, error) {
	r := &orchRun{stack: stack, hc: hc, ids: ids, readers: readers, allReady: make(chan struct{}),
		think: dist.Uniform[time.Duration]{Min: think / 2, Max: think * 3 / 2}, pages: map[string]*httpc.Request{}}
	for kind, path := range map[string]string{kindMissionList: "/api/missions", kindMissionPage: "/api/missions/1",
		kindInbox: "/api/inbox", kindScoreboard: "/api/scoreboard", kindBudgets: "/api/budgets"} {
		req, err := hc.Prepare("GET", stack.URL+path, nil, nil)
		if err != nil {
			return nil, err
		}
		r.pages[kind] = req
	}
	var err error
	if r.approve, err = hc.Prepare("POST", stack.URL+"/api/missions/approve",
		[]httpc.Header{{Name: "Content-Type", Value: "application/json"}}, []byte(`{"all_drafts":true}`)); err != nil {
		return nil, err
	}
	for i, id := range ids {
		end := make(chan bool, 1)
		r.ends = append(r.ends, end)
		g, err := sse.NewGroup(sse.Config{URL: fmt.Sprintf("%s/api/missions/%d/events", stack.URL, id),
			Dialer: hc.Dialer(), KeepaliveInterval: 15 * time.Second,
			// Events replayed from before the approval (the mission's
			// creation) say nothing of fan-out.
			WrittenAt: func(ev sse.Event) (time.Time, error) {
				if string(ev.Type) == "mission.created" {
					return time.Time{}, sse.ErrNoWrittenAt
				}
				return sse.WrittenAtField("written_at")(ev)
			},
			OnEvent: func(_ *sse.Stream, ev sse.Event, _ time.Time) { r.onEvent(i, ev) }})
		if err != nil {
			return nil, err
		}
		r.boards = append(r.boards, g)
	}
	return r, nil
}

// level is the number of users: the boards, the readers and the operator.
func (r *orchRun) level() int { return len(r.ids) + r.readers + 1 }

func (r *orchRun) users() *loadtest.Users {
	return &loadtest.Users{
		Kinds: []string{kindMissionList, kindMissionPage, kindInbox, kindScoreboard, kindBudgets, kindApprove, kindMissionDone,
			sse.KindConnect, sse.KindFirstEvent, sse.DefaultFanoutKind, sse.KindStream, sse.KindHealth, sse.KindMalformed},
		Behavior: r.behave, Limiters: []loadtest.Limiter{r.hc}, Timeout: 30 * time.Second,
	}
}

// onEvent is board i's stream: its first event makes it ready; the
// mission's end is handed to the board.
func (r *orchRun) onEvent(i int, ev sse.Event) {
	switch string(ev.Type) {
	case "mission.created":
		if r.ready.Add(1) == int64(len(r.ids)) {
			r.once.Do(func() { close(r.allReady) })
		}
	case "mission.done", "mission.failed":
		select {
		case r.ends[i] <- string(ev.Type) == "mission.done":
		default:
		}
	}
}

func (r *orchRun) behave(u *loadtest.User) {
	switch n := len(r.ids); {
	case u.ID < n:
		r.board(u, u.ID)
	case u.ID < n+r.readers:
		r.read(u)
	case u.ID == n+r.readers:
		r.operate(u)
	default:
		<-u.Context().Done()
	}
}

// board follows mission i's stream until the mission ends, and records the
// time from the approval to the end: OK when done, an AppError when it
// failed.
func (r *orchRun) board(u *loadtest.User, i int) {
	s := r.boards[i].OpenFor(u.Context(), u)
	defer s.Close()
	// Its start-up work is opening the stream: ready now, so that the hold
	// does not wait for it (Scenario.Drain) while the operator approves
	// and the missions end before the hold — which a busy CI run saw.
	u.Ready()
	select {
	case done := <-r.ends[i]:
		took := time.Since(time.Unix(0, r.approved.Load()))
		resp := loadtest.Response{Outcome: loadtest.OK}
		if !done {
			resp = loadtest.Response{Outcome: loadtest.AppError, Err: fmt.Errorf("mission %d failed", r.ids[i])}
		}
		u.Record(kindMissionDone, took, resp)
		s.Close()
		<-u.Context().Done()
	case <-u.Context().Done():
	}
}

// read loads the readers' pages in turn, a pause apart, starting at a
// random point of its round and of its pause (User.Think).
func (r *orchRun) read(u *loadtest.User) {
	kinds := []string{kindMissionList, kindMissionPage, kindInbox, kindScoreboard, kindBudgets}
	var call httpc.Call
	for i := u.Rand.IntN(len(kinds)); u.Think(r.think); i++ {
		kind := kinds[i%len(kinds)]
		call.Path = ""
		switch kind {
		case kindMissionList:
			call.Path = fmt.Sprintf("/api/missions?page=%d", 1+u.Rand.IntN(max(1, len(r.ids)/25)))
		case kindMissionPage:
			call.Path = fmt.Sprintf("/api/missions/%d", r.ids[u.Rand.IntN(len(r.ids))])
		}
		u.Do(kind, func(ctx context.Context) loadtest.Response { return r.hc.Exchange(ctx, r.pages[kind], &call) })
	}
}

// operate approves every draft at once when every board holds its stream
// (or after 30 s, when some never will: their missions are then judged
// unfinished).
func (r *orchRun) operate(u *loadtest.User) {
	u.Ready() // no start-up work: it waits for the boards
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-r.allReady:
	case <-t.C:
	case <-u.Context().Done():
		return
	}
	r.approved.Store(time.Now().UnixNano())
	u.Do(kindApprove, func(ctx context.Context) loadtest.Response { return r.hc.Exchange(ctx, r.approve, nil) })
	<-u.Context().Done()
}

// allFinished checks that every mission finished (done, not failed) within
// the step.
func (r *orchRun) allFinished() loadtest.Check {
	return loadtest.Custom("every mission finishes", func(s *loadtest.StepResult) error {
		k := s.Kind(kindMissionDone)
		var done int64
		if k != nil {
			done = k.Outcomes[loadtest.OK]
		}
		if done < int64(len(r.ids)) {
			return fmt.Errorf("%d of %d missions finished within the hold", done, len(r.ids))
		}
		return nil
	})
}

// orchMetrics samples each web process's held streams, beside what the
// stack samples (stack.Scenario: every process's CPU and memory,
// PostgreSQL's connections by state and application and its transactions
// per second).
func orchMetrics(stack *fixtures.Stack) []loadtest.Sampler {
	return targetMetrics(stack, prom.Series{Metric: "orch_held_streams", Name: "held_streams"})
}

// orchFindings are the seed's figures beside the step table: fan-out
// percentiles, missions finished and their time to finish, and
// PostgreSQL's transactions per second.
func orchFindings(res *loadtest.Result) ([]result.Finding, error) {
	var out []result.Finding
	for _, s := range res.Steps {
		if f := s.Kind(sse.DefaultFanoutKind); f != nil {
			out = append(out, result.Finding{Name: "fan-out (event written → received on its board)",
				Text: fmt.Sprintf("p50 %s, p95 %s, p99 %s over %d events", format.Latency(f.Latency.P50),
					format.Latency(f.Latency.P95), format.Latency(f.Latency.P99), f.Answered())})
		}
		if m := s.Kind(kindMissionDone); m != nil {
			out = append(out, result.Finding{Name: "missions finished", Value: float64(m.Outcomes[loadtest.OK]), Low: float64(m.Outcomes[loadtest.OK]),
				High: float64(m.Outcomes[loadtest.OK]), Unit: "count",
				Text: fmt.Sprintf("approval to end: p50 %s, max %s", format.Latency(m.Latency.P50), format.Latency(m.Latency.Max))})
		}
		if tps := s.Resource("postgres", "transactions_per_s"); tps != nil {
			out = append(out, result.Finding{Name: "PostgreSQL transactions per second",
				Text: fmt.Sprintf("mean %.0f, max %.0f over the hold (%d samples)", tps.Mean, tps.Max, tps.Samples)})
		}
	}
	return out, nil
}
