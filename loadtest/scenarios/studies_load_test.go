//go:build load

package scenarios

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/study"
	"github.com/headroom-dev/headroom/mockupstream"
)

// The runtime studies (seed 003) — TestLoad_Forward, TestLoad_FeatureTax,
// TestLoad_Drain — share their set-up here. Each cell is one relay,
// configured by its environment, alone on loopback (no Caddy: the studies
// measure the relay's runtime, not the proxy), on the embedded database,
// against a stub upstream that answers every call successfully after a
// fixed delay and stays far from saturation. A cell's figures are read
// relative to its baseline cell on the same host.

// studyUsers is the number of seeded users (and MCP sessions) a cell's
// load goes through, each with the seed's five connectors.
const studyUsers = 20

// stubUpstream returns the stub upstream of the studies: every tools/call
// answered successfully after exactly delay with 256 bytes, listings after
// the same delay.
func stubUpstream(delay time.Duration) mockupstream.Behavior {
	d := mockupstream.Duration(delay)
	return mockupstream.Behavior{Seed: 1, ToolCount: 4,
		List: mockupstream.Latency{Median: d}, Call: mockupstream.Latency{Median: d},
		Sizes: []mockupstream.Size{{Weight: 1, Bytes: 256}}}
}

// lean reports whether a study runs the lean part of its cells: a -short
// run without LOADTEST_MATRIX=full (make test's; see fixtures.MatrixEnv).
// The nightly's -short job and every full-size run measure all of them.
func lean(t *testing.T) bool { return testing.Short() && !fixtures.FullMatrix(t) }

// cellStack is one cell's running relay and the generator's client.
type cellStack struct {
	stack *fixtures.Stack
	pop   *relayseed.Population
	hc    *httpc.Client
}

// startCell starts a relay with env (RELAY_* variables) alone on SQLite
// with the stub upstream b, seeds studyUsers users without usage history,
// and makes a client with conns connections and the given timeout. The
// relay serves no profiles to the run: the studies measure its cost, which
// a CPU profile in every hold would add to.
func startCell(t *testing.T, k *loadtest.Knobs, env map[string]string, b mockupstream.Behavior, conns int, timeout time.Duration) *cellStack {
	t.Helper()
	relay := relayload.Service()
	relay.Pprof = ""
	stack := fixtures.Start(t, fixtures.WithTarget(relay), fixtures.WithDatabase(fixtures.SQLite), fixtures.WithoutProxy(),
		fixtures.WithUpstreamBehavior(b), fixtures.WithTargetEnv(env))
	pop := populate(t, k, stack, studyUsers, 0, 1)
	o := stack.ClientOptions()
	o.Timeout, o.MaxConnsPerHost = timeout, conns
	hc, err := httpc.New(o)
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	return &cellStack{stack: stack, pop: pop, hc: hc}
}

// requests returns the cell's request function of kind (tools/call or
// tools/list) over studyUsers initialized sessions.
func (c *cellStack) requests(t *testing.T, kind string) func(context.Context) loadtest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	do, err := rateRequests(ctx, c.hc, c.stack.URL, c.pop.TokenOf, studyUsers, kind, "")
	require.NoError(t, err)
	return do
}

// cellFigures are one cell's figures over its hold.
type cellFigures struct {
	Offered, Achieved float64 // arrivals and successful answers per second
	Mean, P99         time.Duration
	Sent, Completed   int64 // requests sent (every outcome), answered successfully
}

// Lost is what was sent and not answered successfully.
func (f cellFigures) Lost() int64 { return f.Sent - f.Completed }

// figuresOf returns the figures of kind over every step of res.
func figuresOf(res *loadtest.Result, kind string) cellFigures {
	var f cellFigures
	var secs, meanSum float64
	var answered int64
	for _, s := range res.Steps {
		k := s.Kind(kind)
		if k == nil {
			continue
		}
		secs += s.Seconds()
		f.Offered += s.Offered * s.Seconds()
		f.Sent += k.Total()
		f.Completed += k.Outcomes[loadtest.OK]
		n := k.Answered()
		meanSum += float64(k.Latency.Mean) * float64(n)
		answered += n
		f.P99 = max(f.P99, k.Latency.P99)
	}
	if secs > 0 {
		f.Offered /= secs
		f.Achieved = float64(f.Completed) / secs
	}
	if answered > 0 {
		f.Mean = time.Duration(meanSum / float64(answered))
	}
	return f
}

// rateColumns are the columns of a cell measured at an offered rate.
var rateColumns = []study.Column{
	{Key: "offered", Title: "Offered (req/s)", Digits: 0},
	{Key: "achieved", Title: "Achieved (ok/s)", Digits: 1},
	{Key: "mean_ms", Title: "Mean latency (ms)", Digits: 1},
	{Key: "p99_ms", Title: "p99 latency (ms)", Digits: 1},
	{Key: "sent", Title: "Sent"},
	{Key: "completed", Title: "Completed"},
	{Key: "lost", Title: "Lost"},
}

// figures returns the row figures of rateColumns.
func (f cellFigures) figures() map[string]float64 {
	return map[string]float64{
		"offered": f.Offered, "achieved": f.Achieved,
		"mean_ms": ms(f.Mean), "p99_ms": ms(f.P99),
		"sent": float64(f.Sent), "completed": float64(f.Completed), "lost": float64(f.Lost()),
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// studyPage collects a study's rows from its subtests and writes the
// study when the test ends.
type studyPage struct {
	mu    sync.Mutex
	s     *study.Study
	first *loadtest.Result
}

func newStudyPage(t *testing.T, title, reading, command string) *studyPage {
	return &studyPage{s: &study.Study{Name: t.Name(), Title: title, Reading: reading, Command: command, Short: testing.Short()}}
}

// add records row in the table titled title (with columns), and the cell's
// result for the lab profile.
func (p *studyPage) add(res *loadtest.Result, title string, columns []study.Column, row study.Row) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first == nil && res != nil {
		p.first = res
	}
	p.s.Table(title, columns...).Add(row)
}

// write adds the problems, writes the study beside the cells' results and
// logs its page; a problem fails t.
func (p *studyPage) write(t *testing.T, problems []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.first != nil {
		p.s.Lab = study.LabOf(p.first)
		if p.s.Command == "" {
			p.s.Command = p.first.Provenance.Command
		}
	}
	p.s.Problems = problems
	path, err := study.Path(t.Name())
	require.NoError(t, err)
	require.NoError(t, p.s.Write(path))
	t.Logf("study written to %s:\n%s", path, study.Page(p.s))
	if err := p.s.Err(); err != nil {
		t.Error(err)
	}
}

// rows returns the study's rows by cell name.
func (p *studyPage) rows() map[string]study.Row {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]study.Row{}
	for _, tb := range p.s.Tables {
		for _, r := range tb.Rows {
			out[r.Cell] = r
		}
	}
	return out
}
