package relayseed_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/seed"
)

// env is a fresh database of one dialect with the relay's schema.
type env struct {
	target seed.DB
	q      querier
	url    string // for seed.Open: a second, independent connection
}

// dialects makes a fresh database of each dialect.
var dialects = []struct {
	name string
	new  func(t *testing.T, migrate bool) env
}{
	{"sqlite", func(t *testing.T, migrate bool) env {
		db, target, path := newSQLite(t, migrate)
		return env{target: target, q: sqlQuerier(db), url: "sqlite:" + path}
	}},
	{"postgres", func(t *testing.T, migrate bool) env {
		conn, target := newPostgres(t, migrate)
		return env{target: target, q: pgQuerier(conn), url: conn.Config().ConnString()}
	}},
}

// testSpec is a population big enough for distributions to show.
func testSpec() relayseed.Spec {
	return relayseed.Spec{Workspaces: 2, UsersPerWorkspace: 25, ConnectorsPerUser: 5,
		UsageRows: 20_000, EventsRows: 2_000, Days: 14, Seed: 7, Secret: testSecret,
		UpstreamURL: "http://127.0.0.1:9/mcp"}
}

func count(t *testing.T, q querier, table string) int {
	return int(scalar(t, q, "SELECT count(*) FROM "+table))
}

func TestApplyWritesThePopulation(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := d.new(t, true)
			spec := testSpec()
			var logs []string
			pop, err := relayseed.Apply(t.Context(), e.target, spec, relayseed.WithLogf(func(f string, a ...any) {
				logs = append(logs, f)
			}))
			require.NoError(t, err)
			assert.True(t, pop.Applied)
			assert.Len(t, logs, 1, "one summary line for a short load")

			assert.Equal(t, 2, count(t, e.q, "workspaces"))
			assert.Equal(t, 50, count(t, e.q, "users"))
			assert.Equal(t, 250, count(t, e.q, "connectors"))
			assert.Equal(t, 20_000, count(t, e.q, "usage"))
			assert.Equal(t, 2_000, count(t, e.q, "events"))
			assert.Equal(t, 1, count(t, e.q, "seed_marker"))
			assert.Equal(t, 250, count(t, e.q, "connectors WHERE upstream_url = 'http://127.0.0.1:9/mcp'"))

			// Every user's token hash is that of its derived token.
			require.NoError(t, e.q(t.Context(), "SELECT id, token_hash FROM users", func(v []any) {
				id := v[0].(int64)
				assert.Equal(t, schema.TokenHash(relayseed.Token(testSecret, id)), v[1], "user %d", id)
			}))
			var name, hash string
			require.NoError(t, e.q(t.Context(), "SELECT name, spec_hash FROM seed_marker", func(v []any) {
				name, hash = v[0].(string), v[1].(string)
			}))
			assert.Equal(t, relayseed.DefaultName, name)
			assert.Equal(t, spec.Hash(), hash)

			checkUsage(t, e.q, pop)
			checkEvents(t, e.q, pop)
		})
	}
}

// micros returns a time column's value as Unix microseconds on either
// dialect.
func micros(v any) int64 {
	if t, ok := v.(time.Time); ok {
		return t.UnixMicro()
	}
	return v.(int64)
}

// checkUsage checks the distributions of the seeded calls.
func checkUsage(t *testing.T, q querier, pop *relayseed.Population) {
	t.Helper()
	s := pop.Spec
	end := s.End.UnixMicro()
	start := end - int64(s.Days)*24*3600*1e6
	var durations []float64
	outcomes := map[string]int{}
	tools := map[string]int{}
	perUser := map[int64]int{}
	var big, sized int
	var byHour [24]int
	n := 0
	err := q(t.Context(), "SELECT workspace_id, user_id, connector_id, tool, started_at, duration_us, outcome, bytes FROM usage ORDER BY id", func(v []any) {
		n++
		ws, uid, cid, tool := v[0].(int64), v[1].(int64), v[2].(int64), v[3].(string)
		at, dur, outcome, bytes := micros(v[4]), v[5].(int64), v[6].(string), v[7].(int64)
		u, ok := pop.User(uid)
		require.True(t, ok, "row %d: user %d not in the population", n, uid)
		require.Equal(t, u.WorkspaceID, ws, "row %d: workspace of user %d", n, uid)
		i := slices.IndexFunc(u.Connectors, func(c relayseed.Connector) bool { return c.ID == cid })
		require.GreaterOrEqual(t, i, 0, "row %d: connector %d is not user %d's", n, cid, uid)
		require.Contains(t, u.Connectors[i].QualifiedTools(), tool, "row %d: tool %q is not on connector %d", n, tool, cid)
		require.True(t, at >= start && at < end, "row %d: started_at %d outside [%d, %d)", n, at, start, end)
		require.True(t, dur > 0 && dur <= 50e6, "row %d: duration %d µs", n, dur)
		durations = append(durations, float64(dur))
		outcomes[outcome]++
		tools[tool]++
		perUser[uid]++
		if outcome == schema.OutcomeOK {
			sized++
			if bytes >= 512<<10 {
				big++
			}
		}
		byHour[time.UnixMicro(at).UTC().Hour()]++
	})
	require.NoError(t, err)
	require.Equal(t, s.UsageRows, n)

	frac := func(o string) float64 { return float64(outcomes[o]) / float64(n) }
	assert.InDelta(t, 0.08, frac(schema.OutcomeToolError), 0.01, "tool errors")
	assert.InDelta(t, 0.01, frac(schema.OutcomeTimeout)+frac(schema.OutcomeUpstreamError), 0.005, "timeouts and upstream errors")
	assert.Positive(t, outcomes[schema.OutcomeTimeout])
	assert.Positive(t, outcomes[schema.OutcomeUpstreamError])
	slices.Sort(durations)
	assert.InEpsilon(t, 1.2e6, durations[n/2], 0.1, "median duration 1.2 s")
	assert.InEpsilon(t, 12e6, durations[n*95/100], 0.15, "p95 duration 12 s")
	assert.InDelta(t, 0.02, float64(big)/float64(sized), 0.006, "2%% of answers near 1 MB")

	counts := make([]int, 0, len(tools))
	for _, c := range tools {
		counts = append(counts, c)
	}
	slices.Sort(counts)
	assert.Len(t, counts, len(s.Tools), "every tool is called")
	assert.Greater(t, counts[len(counts)-1], 5*counts[0], "tool popularity is skewed")
	first := relayseed.ConnectorName(0) + "__" + s.Tools[0]
	last := relayseed.ConnectorName((len(s.Tools)-1)%s.ConnectorsPerUser) + "__" + s.Tools[len(s.Tools)-1]
	assert.Greater(t, tools[first], 5*tools[last], "earlier tools are more popular")

	users := make([]int, 0, len(perUser))
	for _, c := range perUser {
		users = append(users, c)
	}
	slices.Sort(users)
	assert.Greater(t, users[len(users)-1], 3*users[len(users)/2], "a few users make many calls")

	day := byHour[10] + byHour[11] + byHour[12] + byHour[13] + byHour[14]
	night := byHour[1] + byHour[2] + byHour[3] + byHour[4] + byHour[5]
	assert.Greater(t, day, 5*night, "daily cycle: afternoon busier than night")
}

// checkEvents checks the seeded events: kind, payload, time order.
func checkEvents(t *testing.T, q querier, pop *relayseed.Population) {
	t.Helper()
	end := pop.Spec.End.UnixMicro()
	var last int64
	n := 0
	require.NoError(t, q(t.Context(), "SELECT id, workspace_id, user_id, kind, payload, created_at FROM events ORDER BY id", func(v []any) {
		n++
		uid, kind, payload, at := v[2].(int64), v[3].(string), v[4].(string), micros(v[5])
		assert.Equal(t, "call", kind)
		var p struct {
			Tool        string    `json:"tool"`
			ConnectorID int64     `json:"connector_id"`
			Outcome     string    `json:"outcome"`
			DurationUS  int64     `json:"duration_us"`
			Bytes       *int64    `json:"bytes"`
			StartedAt   time.Time `json:"started_at"`
		}
		require.NoError(t, json.Unmarshal([]byte(payload), &p), payload)
		u, _ := pop.User(uid)
		i := slices.IndexFunc(u.Connectors, func(c relayseed.Connector) bool { return c.ID == p.ConnectorID })
		require.GreaterOrEqual(t, i, 0, "connector %d is user %d's", p.ConnectorID, uid)
		assert.Contains(t, u.Connectors[i].QualifiedTools(), p.Tool)
		assert.Contains(t, []string{"ok", "tool_error", "timeout", "upstream_error"}, p.Outcome)
		assert.Positive(t, p.DurationUS)
		assert.NotNil(t, p.Bytes)
		assert.Equal(t, at, p.StartedAt.UnixMicro()+p.DurationUS, "written when the call completed")
		assert.GreaterOrEqual(t, at, last, "events in time order by id")
		assert.Less(t, at, end)
		last = at
	}))
	assert.Equal(t, pop.Spec.EventsRows, n)
}

func TestApplyIsDeterministic(t *testing.T) {
	spec := testSpec()
	digests := map[string]map[string]string{}
	for _, d := range dialects {
		for run := range 2 {
			e := d.new(t, true)
			_, err := relayseed.Apply(t.Context(), e.target, spec)
			require.NoError(t, err)
			got := digest(t, e.q)
			if run == 1 {
				assert.Equal(t, digests[d.name], got, "dialect=%s: a second fresh database holds identical rows", d.name)
			}
			digests[d.name] = got
		}
	}
	if len(digests) == 2 {
		assert.Equal(t, digests["sqlite"], digests["postgres"], "both dialects hold identical rows")
	}

	other := spec
	other.Seed++
	e := dialects[0].new(t, true)
	_, err := relayseed.Apply(t.Context(), e.target, other)
	require.NoError(t, err)
	got := digest(t, e.q)
	assert.NotEqual(t, digests["sqlite"]["usage"], got["usage"], "another seed draws other calls")
	assert.Equal(t, digests["sqlite"]["users"], got["users"], "users do not depend on the seed")
}

func TestApplyIsIdempotent(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := d.new(t, true)
			spec := testSpec()
			_, err := relayseed.Apply(t.Context(), e.target, spec)
			require.NoError(t, err)
			before := digest(t, e.q)

			t.Run("spec=same", func(t *testing.T) {
				var logs []string
				pop, err := relayseed.Apply(t.Context(), e.target, spec, relayseed.WithLogf(func(f string, a ...any) {
					logs = append(logs, f)
				}))
				require.NoError(t, err)
				assert.False(t, pop.Applied, "nothing written")
				assert.Len(t, pop.Users, 50, "the population is still returned")
				assert.Equal(t, before, digest(t, e.q))
				require.Len(t, logs, 1)
				assert.Contains(t, logs[0], "already")
			})
			t.Run("spec=different", func(t *testing.T) {
				other := spec
				other.UsageRows++
				_, err := relayseed.Apply(t.Context(), e.target, other)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "different spec")
				assert.Contains(t, err.Error(), "relayseed.Remove")
				assert.Contains(t, err.Error(), spec.Hash(), "names the seeded hash")
				assert.Equal(t, before, digest(t, e.q))
			})
			t.Run("secret=different", func(t *testing.T) {
				other := spec
				other.Secret = []byte("not the seeding secret")
				_, err := relayseed.Apply(t.Context(), e.target, other)
				require.Error(t, err)
				assert.Contains(t, err.Error(), "another secret")
				assert.NotContains(t, err.Error(), "not the seeding secret")
			})
		})
	}
}

func TestRemove(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := d.new(t, true)
			spec := testSpec()
			_, err := relayseed.Apply(t.Context(), e.target, spec)
			require.NoError(t, err)
			// A row the relay recorded for a seeded user since.
			_, err = seed.Copy(t.Context(), e.target, "usage", []string{"workspace_id", "user_id", "connector_id", "tool", "started_at", "duration_us", "outcome", "bytes"},
				seed.FromSeq(slices.Values([][]any{{int64(1), int64(1), int64(1), "search", timeFor(e.target, time.Now()), int64(5), "ok", int64(10)}})))
			require.NoError(t, err)

			other := spec
			other.Seed++
			err = relayseed.Remove(t.Context(), e.target, other)
			require.Error(t, err, "another spec's rows are not ours to guess")
			assert.Contains(t, err.Error(), "pass the spec that seeded it")
			assert.Equal(t, 20_001, count(t, e.q, "usage"))

			noSecret := spec
			noSecret.Secret = nil
			require.NoError(t, relayseed.Remove(t.Context(), e.target, noSecret), "Remove needs no secret")
			for _, tb := range tables {
				assert.Zero(t, count(t, e.q, tb.name), tb.name)
			}
			require.NoError(t, relayseed.Remove(t.Context(), e.target, spec), "removing again does nothing")

			pop, err := relayseed.Apply(t.Context(), e.target, other)
			require.NoError(t, err, "another spec applies after Remove")
			assert.True(t, pop.Applied)
		})
	}
}

// timeFor returns t as the target's dialect stores it.
func timeFor(target seed.DB, t time.Time) any {
	if target.Dialect() == seed.DialectSQLite {
		return t.UnixMicro()
	}
	return t
}

func TestApplyRejectsBadInputBeforeWriting(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := d.new(t, true)
			for _, tc := range []struct {
				name string
				spec relayseed.Spec
				want string
			}{
				// A negative size.
				{"spec=negative", relayseed.Spec{UsageRows: -1, Secret: testSecret}, "UsageRows is -1"},
				// More connectors than tools.
				{"spec=connectors>tools", relayseed.Spec{ConnectorsPerUser: 3, Tools: []string{"a", "b"}, Secret: testSecret}, "only 2 tools"},
				// No secret.
				{"spec=no-secret", relayseed.Spec{UsageRows: 10}, "Secret is empty"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					_, err := relayseed.Apply(t.Context(), e.target, tc.spec)
					require.Error(t, err)
					assert.Contains(t, err.Error(), tc.want)
					for _, tb := range tables {
						assert.Zero(t, count(t, e.q, tb.name), tb.name)
					}
				})
			}
		})
	}
}

func TestApplyFailingHalfwayLeavesNothing(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := d.new(t, true)
			target, err := seed.Open(t.Context(), e.url)
			require.NoError(t, err)
			defer target.Close()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var cancelled bool
			// The first progress line comes during the usage load, after
			// workspaces, users and connectors are written: cancel there.
			_, err = relayseed.Apply(ctx, target, testSpec(), relayseed.WithProgressEvery(time.Nanosecond),
				relayseed.WithLogf(func(f string, a ...any) {
					if !cancelled && strings.Contains(f, "rows/s") {
						cancelled = true
						cancel()
					}
				}))
			require.Error(t, err)
			require.True(t, cancelled, "the load was cancelled part-way")
			assert.Contains(t, err.Error(), "rolled back")
			assert.ErrorIs(t, err, context.Canceled)
			for _, tb := range tables {
				assert.Zero(t, count(t, e.q, tb.name), tb.name)
			}
		})
	}
}

func TestApplyNeedsTheSchema(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := d.new(t, false)
			_, err := relayseed.Apply(t.Context(), e.target, testSpec())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "apply the schema first")
		})
	}
}

func TestApplyRefusesOccupiedIDs(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := d.new(t, true)
			_, err := seed.Copy(t.Context(), e.target, "workspaces", []string{"id", "name"},
				seed.FromSeq(slices.Values([][]any{{int64(2), "someone else's"}})))
			require.NoError(t, err)
			_, err = relayseed.Apply(t.Context(), e.target, testSpec())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "no seed_marker row")
			assert.Equal(t, 1, count(t, e.q, "workspaces"))
			assert.Zero(t, count(t, e.q, "users"))
		})
	}
}

func TestApplyReportsAnUnreachableDatabase(t *testing.T) {
	for _, d := range dialects {
		t.Run("dialect="+d.name, func(t *testing.T) {
			e := d.new(t, true)
			target, err := seed.Open(t.Context(), e.url)
			require.NoError(t, err)
			require.NoError(t, target.Close())
			_, err = relayseed.Apply(t.Context(), target, testSpec())
			require.Error(t, err)
			assert.Contains(t, err.Error(), "cannot reach")
		})
	}
}
