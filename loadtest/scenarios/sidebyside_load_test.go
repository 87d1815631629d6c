//go:build load

package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/mcp"
	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// variants gathers the results of a scenario's subtests — setups,
// clients, eras — so that the scenario can set them side by side, as the
// seeds do, in one table beside its results.
type variants struct {
	mu  sync.Mutex
	res map[string]*loadtest.Result // by variant, "standard/live"
}

func newVariants() *variants { return &variants{res: map[string]*loadtest.Result{}} }

func (v *variants) add(name string, res *loadtest.Result) {
	if res == nil {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.res[name] = res
}

func (v *variants) get(name string) *loadtest.Result {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.res[name]
}

// writeTable writes t beside the test's results (stem: the test's name
// and name, as a result of its own would be), and logs it.
func writeTable(t *testing.T, name string, tb report.Table) {
	t.Helper()
	writeTableAs(t, t.Name()+"/"+name, tb)
}

// writeTableAs writes t where a result of the test named full would be.
func writeTableAs(t *testing.T, full string, tb report.Table) {
	t.Helper()
	path, _, err := files.ResultPaths(full)
	require.NoError(t, err)
	stem := strings.TrimSuffix(path, ".json")
	require.NoError(t, report.WriteTable(stem, tb))
	t.Logf("%s (%s.md, .csv):\n%s", tb.Title, stem, tb.Markdown())
}

// stepAt returns res's step at level, nil when it has none.
func stepAt(res *loadtest.Result, level float64) *loadtest.StepResult {
	if res == nil {
		return nil
	}
	for _, s := range res.Steps {
		if s.Step.Level == level {
			return s
		}
	}
	return nil
}

// rateCell is a step's successful requests per second and its p95 of every
// request together: "467/s, p95 124 ms"; "–" without the step, "idle" for
// an idle row.
func rateCell(s *loadtest.StepResult) string {
	switch {
	case s == nil:
		return "–"
	case s.Idle():
		return "idle"
	}
	p95 := "–"
	if k := s.Kind(loadtest.AllRequests); k != nil && k.Answered() > 0 {
		p95 = format.Latency(k.Latency.P95)
	}
	cell := fmt.Sprintf("%.0f/s, p95 %s", s.Throughput, p95)
	if s.Verdict != result.Pass {
		cell += " (" + string(s.Verdict) + ")"
	}
	return cell
}

// resCell is a component's CPU and memory in a step, "–" without the step.
func resCell(s *loadtest.StepResult, component string) string {
	if s == nil {
		return "–"
	}
	return s.ResourceCell(component)
}

// helpdeskTables sets the helpdesk's runs side by side as seed 004 compares
// them: Standard against Scale, agents level by level (live client), and
// the live client against the poll client at the top step, per setup.
// Each is written only when both of its sides ran.
func helpdeskTables(t *testing.T, v *variants, setups []string) {
	std, scale := v.get("standard/live"), v.get("scale/live")
	if std != nil && scale != nil {
		var levels []float64
		for _, r := range []*loadtest.Result{std, scale} {
			for _, s := range r.Steps {
				if !slices.Contains(levels, s.Step.Level) {
					levels = append(levels, s.Step.Level)
				}
			}
		}
		slices.Sort(levels)
		tb := report.Table{Title: "Standard vs Scale: agents online (seed 004, live client)",
			Header: []string{"Agents", "Standard: requests/s, p95", "Standard: desk CPU / memory", "Standard: PostgreSQL CPU / memory",
				"Scale: requests/s, p95", "Scale: desk CPU / memory", "Scale: PostgreSQL CPU / memory"},
			Note: note(std)}
		for _, l := range levels {
			a, b := stepAt(std, l), stepAt(scale, l)
			label := format.Level(l)
			if l == 0 {
				label = "idle"
			}
			tb.Rows = append(tb.Rows, []string{label, rateCell(a), resCell(a, "desk"), resCell(a, "postgres"),
				rateCell(b), resCell(b, "desk"), resCell(b, "postgres")})
		}
		writeTable(t, "standard_vs_scale", tb)
	}

	tb := report.Table{Title: "Live updates vs polling at the top step (seed 004)", Header: []string{""}}
	var cols [][2]*loadtest.StepResult
	for _, setup := range setups {
		live, poll := v.get(setup+"/live"), v.get(setup+"/poll")
		if live == nil || poll == nil || len(poll.Steps) == 0 {
			continue
		}
		top := poll.Steps[len(poll.Steps)-1].Step.Level
		tb.Header = append(tb.Header, fmt.Sprintf("%s, live (%s agents)", setup, format.Level(top)), fmt.Sprintf("%s, poll (%s agents)", setup, format.Level(top)))
		cols = append(cols, [2]*loadtest.StepResult{stepAt(live, top), stepAt(poll, top)})
		if tb.Note == "" {
			tb.Note = note(live)
		}
	}
	if len(cols) == 0 {
		return
	}
	rows := []struct {
		name string
		cell func(s *loadtest.StepResult) string
	}{
		{"Requests/s, p95 of all", rateCell},
		{"Desk CPU / memory", func(s *loadtest.StepResult) string { return resCell(s, "desk") }},
		{"PostgreSQL CPU / memory", func(s *loadtest.StepResult) string { return resCell(s, "postgres") }},
		{"Caddy CPU / memory (the live streams)", func(s *loadtest.StepResult) string { return resCell(s, "caddy") }},
	}
	for _, r := range rows {
		row := []string{r.name}
		for _, c := range cols {
			row = append(row, r.cell(c[0]), r.cell(c[1]))
		}
		tb.Rows = append(tb.Rows, row)
	}
	writeTable(t, "live_vs_poll", tb)
}

// note says where and how a table's runs were measured.
func note(res *loadtest.Result) string {
	env := res.Environment
	size := "full size"
	if res.Short {
		size = "-short"
	}
	where := ""
	if env.CPUModel != "" {
		where = fmt.Sprintf(" on %s (%d cores), %s backend", env.CPUModel, env.Cores, env.System.Backend)
	}
	commit := format.Commit(res.Provenance.Commit)
	if res.Provenance.Dirty {
		commit += " (with uncommitted changes)"
	}
	return fmt.Sprintf("Measured %s at %s%s, %s; compare within this table, not with another machine's.",
		res.Start.UTC().Format("2006-01-02"), commit, where, size)
}

// eraTable sets the protocol eras side by side as seed 000 does — users
// per pod (TestLoad_GatewayKnee), tool calls and listings per second
// (TestLoad_RateCeiling), handshake against stateless — from the latest
// results of this run's size under testdata/results, one table per
// database, written once two eras have a figure. Both scenarios call it
// when they end: whichever ends last completes the table. A figure whose
// run is of another commit than the rest is marked with it.
func eraTable(t *testing.T) {
	t.Helper()
	eraList := []era{handshakeEra, statelessEra}
	for _, db := range []fixtures.Database{fixtures.Postgres, fixtures.SQLite} {
		rows := []struct{ label, name string }{
			{"Modeled users per pod", "TestLoad_GatewayKnee/db=%s/era=%s"},
			{"Tool calls /s", "TestLoad_RateCeiling/kind=calls/db=%s/era=%s"},
			{"Tool listings /s (5 connectors)", "TestLoad_RateCeiling/kind=listings/db=%s/era=%s"},
		}
		tb := report.Table{Title: fmt.Sprintf("Protocol eras side by side (seed 000, %s)", db),
			Header: []string{"", "Handshake revisions", mcp.StatelessVersion + " (stateless)"}}
		eras := map[string]bool{}
		commits := map[string]int{}
		shapes := map[string]int{}
		type cellOf struct {
			text, commit, shape string
		}
		var cells [][]cellOf
		var first *loadtest.Result
		for _, r := range rows {
			var line []cellOf
			for _, e := range eraList {
				path, _, err := files.ResultPaths(fmt.Sprintf(r.name, db, e.name))
				require.NoError(t, err)
				res, err := result.ReadResult(path)
				if err != nil || res.Partial || res.Verdict == result.Incomplete {
					line = append(line, cellOf{text: "–"})
					continue
				}
				eras[e.name] = true
				commits[res.Provenance.Commit]++
				shape := podShape(res)
				shapes[shape]++
				if first == nil {
					first = res
				}
				line = append(line, cellOf{text: capacityCell(res), commit: res.Provenance.Commit, shape: shape})
			}
			cells = append(cells, line)
		}
		if len(eras) < 2 {
			continue
		}
		common, shape := most(commits), most(shapes)
		for i, r := range rows {
			row := []string{r.label}
			for _, c := range cells[i] {
				text := c.text
				if c.commit != "" && c.commit != common {
					text += " (at " + format.Commit(c.commit) + ")"
				}
				if c.shape != "" && c.shape != shape {
					text += " (on " + c.shape + ")"
				}
				row = append(row, text)
			}
			tb.Rows = append(tb.Rows, row)
		}
		tb.Note = note(first) + " One relay pod of " + shape + " unless a figure says otherwise. Each figure is a knee search's capacity; “–” is a run not made."
		writeTableAs(t, "TestLoad_GatewayKnee/eras_db="+string(db), tb)
	}
}

// podShape is the target's limits a result was measured on: "0.5 CPU /
// 64MiB".
func podShape(res *loadtest.Result) string {
	return format.Limits(res.Environment.System.CPUs, res.Environment.System.Memory)
}

// most returns the key counted most often (the least of equals, so that
// a table does not change between renderings).
func most(counts map[string]int) string {
	best, n := "", 0
	for k, c := range counts {
		if c > n || c == n && k < best {
			best, n = k, c
		}
	}
	return best
}
