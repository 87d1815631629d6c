package result

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHoldQueries(t *testing.T) {
	before := []Statement{
		{ID: 1, Query: "SELECT * FROM users WHERE id = $1", Calls: 100, Rows: 100, TotalMS: 50},
		{ID: 2, Query: "SELECT * FROM tools WHERE user_id = $1", Calls: 10, Rows: 200, TotalMS: 30},
		{ID: 3, Query: "UPDATE counters SET n = n + $1", Calls: 5, Rows: 5, TotalMS: 5},     // not run in the hold
		{ID: 4, Query: "INSERT INTO calls VALUES ($1)", Calls: 900, Rows: 900, TotalMS: 90}, // reset: counts from zero
		{ID: 5, Query: "SELECT $1", Calls: 2, Rows: 2, TotalMS: 1},                          // one ID in two rows (two roles)
		{ID: 5, Query: "SELECT $1", Calls: 3, Rows: 3, TotalMS: 1},
	}
	after := []Statement{
		{ID: 1, Query: "SELECT * FROM users WHERE id = $1", Calls: 150, Rows: 150, TotalMS: 75},
		{ID: 2, Query: "SELECT * FROM tools WHERE user_id = $1", Calls: 510, Rows: 10200, TotalMS: 1530},
		{ID: 3, Query: "UPDATE counters SET n = n + $1", Calls: 5, Rows: 5, TotalMS: 5},
		{ID: 4, Query: "INSERT INTO calls VALUES ($1)", Calls: 40, Rows: 40, TotalMS: 4},
		{ID: 5, Query: "SELECT $1", Calls: 4, Rows: 4, TotalMS: 1.5},
		{ID: 5, Query: "SELECT $1", Calls: 3, Rows: 3, TotalMS: 1},
		{ID: 6, Query: "DELETE FROM sessions", Calls: 1, Rows: 0, TotalMS: 2}, // first run in the hold
	}
	q := HoldQueries(before, after, 50)
	require.NotNil(t, q)
	// 50 + 500 + 0 + 40 + 2 + 1 calls; the UPDATE, not run, is left out.
	assert.EqualValues(t, 593, q.Calls)
	assert.Equal(t, 5, q.Statements)
	assert.InDelta(t, 25+1500+4+0.5+2, q.TotalMS, 1e-9)
	assert.InDelta(t, 593.0/50, q.PerOK, 1e-9)
	require.Len(t, q.Top, 5)
	assert.EqualValues(t, 2, q.Top[0].ID, "busiest by total time first")
	assert.EqualValues(t, 500, q.Top[0].Calls)
	assert.EqualValues(t, 10000, q.Top[0].Rows)
	assert.InDelta(t, 3.0, q.Top[0].MeanMS(), 1e-9)
	assert.EqualValues(t, 1, q.Top[1].ID)
	assert.EqualValues(t, 4, q.Top[2].ID)
	assert.EqualValues(t, 40, q.Top[2].Calls, "a counter that went back counts from zero")
	for _, st := range q.Top {
		assert.NotEqualValues(t, 3, st.ID, "a statement not run in the hold is left out")
		if st.ID == 5 {
			assert.EqualValues(t, 2, st.Calls, "one ID's rows summed before the difference")
		}
	}

	// No successful request: no ratio, the counts still.
	q = HoldQueries(before, after, 0)
	assert.Zero(t, q.PerOK)
	assert.EqualValues(t, 593, q.Calls)

	// At most TopStatements kept, Calls and Statements over all of them.
	var many []Statement
	for i := range 25 {
		many = append(many, Statement{ID: int64(i), Query: fmt.Sprint("SELECT ", i), Calls: 1, TotalMS: float64(i)})
	}
	q = HoldQueries(nil, many, 5)
	assert.Len(t, q.Top, TopStatements)
	assert.Equal(t, 25, q.Statements)
	assert.EqualValues(t, 25, q.Calls)
	assert.EqualValues(t, 24, q.Top[0].ID)
}

// The report counts queries per request: a planted N+1 — the dashboard's
// one query per tool — reads as about N statements per request, and the
// busiest statement is named with its calls per request.
func TestMarkdownQueries(t *testing.T) {
	res := synthetic([]float64{10, 20}, []float64{1, 2}, 0.0, 20, env)
	assert.NotContains(t, res.Markdown(), "## Queries", "no statement source, no section")
	for i, s := range res.Steps {
		secs := s.Seconds()
		require.Positive(t, secs)
		ok := int64(10 * float64(i+1) * secs)
		s.Queries = HoldQueries(nil, []Statement{
			{ID: 7, Query: "SELECT name,\n  calls FROM tool_usage\n WHERE tool_id = $1 | `x`", Calls: 20 * ok, Rows: 20 * ok, TotalMS: 0.05 * float64(20*ok)},
			{ID: 8, Query: "SELECT id FROM tools WHERE workspace = $1 " + strings.Repeat("AND true ", 30), Calls: ok, Rows: 20 * ok, TotalMS: 0.2 * float64(ok)},
		}, ok)
	}
	md := res.Markdown()
	t.Log(md)
	assert.Contains(t, md, "## Queries")
	assert.Contains(t, md, "| 2 | 420.0 | 21.00 | ")
	assert.Contains(t, md, "The busiest statements of step 2")
	assert.Contains(t, md, "| `SELECT name, calls FROM tool_usage WHERE tool_id = $1 ¦ 'x'` | 400.0 | 20.00 | 0.05 ms | 20 ms | 1.0 |")
	assert.Contains(t, md, "AND true AND t…` | 20.0 | 1.00 | 0.20 ms | 4 ms | 20.0 |", "long texts cut at 120 characters")
}

// The environment records the database's and the pooler's settings, and
// the report says them beside what ran.
func TestMarkdownSettings(t *testing.T) {
	res := synthetic([]float64{10}, []float64{1}, 0.0, 10, env)
	res.Environment.System.Components = []Component{
		{Name: "postgres", Role: RoleDatabase, Version: "15.14", Settings: map[string]string{"shared_buffers": "128MB", "max_connections": "200", "shared_preload_libraries": ""}},
		{Name: "pgbouncer", Role: RolePooler, Settings: map[string]string{"pool_mode": "transaction", "default_pool_size": "20"}},
		{Name: "relay", Role: RoleTarget},
	}
	md := res.Markdown()
	assert.Contains(t, md, "postgres settings: max_connections 200 · shared_buffers 128MB · shared_preload_libraries \"\".")
	assert.Contains(t, md, "pgbouncer settings: default_pool_size 20 · pool_mode transaction.")
	assert.NotContains(t, md, "relay settings")
}

// One meaning per column: CPU in cores everywhere, with the share of a
// limit where the component has one; a service's replicas in one column
// as "a + b".
func TestResourceCell(t *testing.T) {
	res := synthetic([]float64{10}, []float64{1}, 0.0, 10, env)
	res.Environment.System.Components = []Component{{Name: "relay", Role: RoleTarget, Replicas: 2}, {Name: "postgres", Role: RoleDatabase}}
	s := res.Steps[0]
	s.Resources = []SeriesSummary{
		{Component: "relay-1", Metric: "cpu", Unit: "cores", Mean: 0.31, Limit: 1},
		{Component: "relay-1", Metric: "memory", Unit: "bytes", Max: 40 << 20, Limit: 512 << 20},
		{Component: "relay-2", Metric: "cpu", Unit: "cores", Mean: 0.29, Limit: 1},
		{Component: "relay-2", Metric: "memory", Unit: "bytes", Max: 41 << 20, Limit: 512 << 20},
		{Component: "postgres", Metric: "cpu", Unit: "cores", Mean: 0.76, Limit: 1},
		{Component: "postgres", Metric: "memory", Unit: "bytes", Max: 272 << 20, Limit: 512 << 20},
		{Component: "caddy", Metric: "memory", Unit: "bytes", Max: 30 << 20},
	}
	assert.Equal(t, "0.76 cores (76% of 1) / 272MiB (53% of 512MiB)", s.ResourceCell("postgres"))
	assert.Equal(t, "0.31 + 0.29 cores / 40MiB + 41MiB", s.ResourceCell("relay"))
	assert.Equal(t, "– / 30MiB", s.ResourceCell("caddy"))
	assert.Equal(t, "– / –", s.ResourceCell("worker"))
	assert.Equal(t, []string{"relay", "postgres", "caddy"}, res.Components(), "the replicas in one column")
	md := res.Markdown()
	assert.Contains(t, md, "relay CPU / memory | postgres CPU / memory | caddy CPU / memory |")
	assert.Contains(t, md, "| 0.31 + 0.29 cores / 40MiB + 41MiB | 0.76 cores (76% of 1) / 272MiB (53% of 512MiB) | – / 30MiB |")
	assert.NotContains(t, md, "relay-1")
}
