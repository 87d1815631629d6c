package deskload_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/deskload"
	"github.com/headroom-dev/headroom/examples/desk/deskseed"
	"github.com/headroom-dev/headroom/examples/desk/server"
	"github.com/headroom-dev/headroom/fixtures/localpg"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

var pg localpg.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	pg.Stop()
	os.Exit(code)
}

// startDesk seeds deskseed.Short into a fresh database and serves a desk
// on it at a loopback port; it returns the base URL and the population.
func startDesk(t *testing.T) (string, *deskseed.Population) {
	t.Helper()
	url := pg.Database(t)
	pool, err := pgxpool.New(context.Background(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	spec := deskseed.Short
	spec.Secret = []byte("deskload test")
	pop, err := deskseed.Apply(context.Background(), pool, spec)
	require.NoError(t, err)

	cfg := server.DefaultConfig()
	cfg.DatabaseURL, cfg.Addr = url, "127.0.0.1:0"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := server.New(ctx, cfg)
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String(), pop
}

// runAgents runs n agents of a for hold, after a 1 s ramp.
func runAgents(t *testing.T, a deskload.Agents, n int, hold time.Duration) *loadtest.StepResult {
	t.Helper()
	hc, err := httpc.New(httpc.Options{MaxConnsPerHost: 4 * n, Timeout: 10 * time.Second})
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	a.HTTP = hc
	w, err := a.Users()
	require.NoError(t, err)
	res, err := loadtest.Run(t.Context(), loadtest.Scenario{
		Workload: w, Plan: loadtest.Ladder{Steps: []loadtest.Step{{Level: float64(n), Ramp: time.Second, Hold: hold}}},
		Drain: 2 * time.Second, SelfCheck: loadtest.SelfCheck{MaxCPU: -1, MaxScheduleLag: -1},
	})
	require.NoError(t, err)
	require.Len(t, res.Steps, 1)
	return res.Steps[0]
}

func total(s *loadtest.StepResult, kind string) int64 {
	if k := s.Kind(kind); k != nil {
		return k.Total()
	}
	return 0
}

// The live client at a fast pace: 20 agents, two in each of the Short
// population's ten units, every case followed by a note. The other agent
// of the unit hears of each note on its stream, with the change's fan-out
// delay, and counts again; with the periodic recount an hour away, every
// recount came from the stream. Every request is answered OK, each case
// page is followed by its heartbeats, and nobody polls the inbox.
func TestLiveAgents(t *testing.T) {
	base, pop := startDesk(t)
	s := runAgents(t, deskload.Agents{URL: base, Token: pop.Token, Agents: pop.Spec.Agents, Pace: 0.02,
		NoteShare: 1, Recount: time.Hour}, 20, 8*time.Second)

	for _, k := range s.Kinds {
		if !k.Observed && k.Kind != sse.KindStream {
			assert.Equal(t, k.Total(), k.Outcomes[loadtest.OK], "%s: %v %v", k.Kind, k.Outcomes, k.Errors)
		}
	}
	cases, beats, notes := total(s, deskload.KindCase), total(s, deskload.KindPresence), total(s, deskload.KindNote)
	require.Positive(t, cases)
	// A stay of 0.6–2.4 s with a heartbeat on opening and every 0.4 s:
	// 2.5 to 6 heartbeats a case, 4.3 on average.
	assert.InDelta(t, 4.3, float64(beats)/float64(cases), 1.2, "heartbeats per case")
	assert.InDelta(t, float64(cases), float64(notes), float64(cases)/5+2, "a note after every case")
	assert.Positive(t, total(s, deskload.KindCounts), "changes on the stream make agents count again")
	assert.Zero(t, total(s, deskload.KindInbox), "the live client loaded its inbox once, before the hold")
	fan := s.Kind(sse.DefaultFanoutKind)
	require.NotNil(t, fan, "changes carry written_at: a fan-out delay each")
	assert.True(t, fan.Observed)
	assert.Positive(t, fan.Answered())
	assert.Less(t, fan.Latency.P50, time.Second)
}

// The poll client: no stream, no counts; the inbox reloaded every Refresh
// (0.02 × 60 s = 1.2 s) by each of 10 agents, and heartbeats every 0.16 s.
func TestPollAgents(t *testing.T) {
	base, pop := startDesk(t)
	s := runAgents(t, deskload.Agents{URL: base, Token: pop.Token, Agents: pop.Spec.Agents, Pace: 0.02,
		Client: deskload.Poll}, 10, 6*time.Second)
	assert.Zero(t, total(s, deskload.KindCounts))
	assert.Nil(t, s.Kind(sse.KindConnect))
	reloads := float64(total(s, deskload.KindInbox)) / 10 / 6
	assert.InDelta(t, 1/1.2, reloads, 0.3, "inbox reloads per agent-second")
	beats := float64(total(s, deskload.KindPresence)) / float64(total(s, deskload.KindCase))
	assert.Greater(t, beats, 6.0, "a heartbeat every 8 s (paced) on a 30–120 s stay: 10 to 16 a case")
}

// Bad settings are refused before anything starts, each naming the field.
func TestAgentsRefusesBadSettings(t *testing.T) {
	_, err := (&deskload.Agents{Client: "push", Pace: -1, NoteShare: 2, Heartbeat: -time.Second}).Users()
	require.Error(t, err)
	for _, want := range []string{"Agents.URL", "Agents.HTTP", "Agents.Token", "Agents.Agents", `Agents.Client is "push"`,
		"Agents.Pace", "Agents.NoteShare", "Agents.Heartbeat"} {
		assert.Contains(t, err.Error(), want)
	}
}
