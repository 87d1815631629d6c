package server_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/schema"
	"github.com/headroom-dev/headroom/examples/desk/server"
)

type caseRow struct {
	ID             int64     `json:"id"`
	UnitID         int64     `json:"unit_id"`
	Subject        string    `json:"subject"`
	Status         string    `json:"status"`
	RequesterName  string    `json:"requester_name"`
	AssigneeID     *int64    `json:"assignee_id"`
	LastActivityAt time.Time `json:"last_activity_at"`
	MessageCount   int       `json:"message_count"`
}

type counts struct {
	Mine, Unassigned, Open int64
	ByStatus               map[string]int64 `json:"by_status"`
}

type inbox struct {
	View    string
	Page    int
	PerPage int `json:"per_page"`
	Total   int64
	Cases   []caseRow
	Counts  counts
}

// busiest returns the agent assigned the most open cases.
func (d *desk) busiest(t *testing.T) int64 {
	return d.count(t, `SELECT assignee_id FROM cases WHERE `+schema.OpenPredicate+` AND assignee_id IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`)
}

// modes are the knob settings every API test runs under: the design
// (shared counts, access cache), each turned off, and the pooler mode
// (simple protocol).
var modes = []struct {
	name string
	set  func(*server.Config)
}{
	{"mode=default", func(*server.Config) {}},
	{"mode=unshared", func(c *server.Config) { c.SharedCounts, c.AccessCache = false, false }},
	{"mode=pooler", func(c *server.Config) { c.Pooler = true }},
}

// TestInbox checks the three views (only the agent's unit, open cases,
// the view's own filter, last activity first, paged), that the counts
// match the database, and the answers to bad requests.
func TestInbox(t *testing.T) {
	d := seeded(t)
	agent := d.busiest(t)
	unit := d.pop.Spec.UnitOf(agent)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			_, base := d.start(t, func(c *server.Config) { m.set(c); c.PageSize = 4 })
			want := map[string]int64{
				schema.ViewMine:       d.count(t, `SELECT count(*) FROM cases WHERE assignee_id = $1 AND `+schema.OpenPredicate, agent),
				schema.ViewUnassigned: d.count(t, `SELECT count(*) FROM cases WHERE unit_id = $1 AND assignee_id IS NULL AND `+schema.OpenPredicate, unit),
				schema.ViewOpen:       d.count(t, `SELECT count(*) FROM cases WHERE unit_id = $1 AND `+schema.OpenPredicate, unit),
			}
			require.Greater(t, want[schema.ViewMine], int64(4), "the busiest agent has more than a page")
			for _, view := range schema.Views {
				var all []caseRow
				for page := 1; ; page++ {
					var in inbox
					require.Equal(t, http.StatusOK, d.call(t, "GET", fmt.Sprintf("%s/api/inbox?view=%s&page=%d", base, view, page), agent, nil, &in))
					assert.Equal(t, view, in.View)
					assert.Equal(t, 4, in.PerPage)
					assert.Equal(t, want[view], in.Total, view)
					all = append(all, in.Cases...)
					if len(in.Cases) < 4 {
						break
					}
				}
				assert.Len(t, all, int(want[view]), view)
				assert.True(t, sort.SliceIsSorted(all, func(i, j int) bool { return all[i].LastActivityAt.After(all[j].LastActivityAt) }), view)
				seen := map[int64]bool{}
				for _, c := range all {
					assert.Equal(t, unit, c.UnitID)
					assert.Contains(t, schema.OpenStatuses, c.Status)
					assert.False(t, seen[c.ID], "case %d twice", c.ID)
					seen[c.ID] = true
					switch view {
					case schema.ViewMine:
						require.NotNil(t, c.AssigneeID)
						assert.Equal(t, agent, *c.AssigneeID)
					case schema.ViewUnassigned:
						assert.Nil(t, c.AssigneeID)
					}
				}
			}
			var c counts
			require.Equal(t, http.StatusOK, d.call(t, "GET", base+"/api/counts", agent, nil, &c))
			assert.Equal(t, want[schema.ViewMine], c.Mine)
			assert.Equal(t, want[schema.ViewUnassigned], c.Unassigned)
			assert.Equal(t, want[schema.ViewOpen], c.Open)
			for _, st := range schema.OpenStatuses {
				assert.Equal(t, d.count(t, `SELECT count(*) FROM cases WHERE unit_id = $1 AND status = $2`, unit, st), c.ByStatus[st], st)
			}

			assert.Equal(t, http.StatusBadRequest, d.call(t, "GET", base+"/api/inbox?view=closed", agent, nil, nil))
			assert.Equal(t, http.StatusBadRequest, d.call(t, "GET", base+"/api/inbox?page=0", agent, nil, nil))
			assert.Equal(t, http.StatusUnauthorized, d.call(t, "GET", base+"/api/inbox", 0, nil, nil))
			assert.Equal(t, http.StatusUnauthorized, d.call(t, "GET", base+"/api/inbox", int64(d.pop.Spec.Agents)+1, nil, nil), "a token of no session")
		})
	}
}

type casePage struct {
	Case     caseRow
	Messages []struct {
		ID      int64
		Kind    string
		AgentID *int64 `json:"agent_id"`
		Body    string
	}
	Unit struct {
		ID         int64
		Name       string
		BrandColor string `json:"brand_color"`
		LogoURL    string `json:"logo_url"`
		Signature  string
	}
	CannedReplies []struct{ ID int64 } `json:"canned_replies"`
	Viewers       []struct {
		AgentID int64 `json:"agent_id"`
	}
}

// TestCasePage checks the case page: the case, its whole conversation in
// order, the unit's branding and canned replies; a case of another unit
// is 404.
func TestCasePage(t *testing.T) {
	d := seeded(t)
	agent := int64(3)
	unit := d.pop.Spec.UnitOf(agent)
	id := d.count(t, `SELECT id FROM cases WHERE unit_id = $1 ORDER BY message_count DESC, id LIMIT 1`, unit)
	other := d.count(t, `SELECT id FROM cases WHERE unit_id <> $1 ORDER BY id LIMIT 1`, unit)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			_, base := d.start(t, m.set)
			var p casePage
			require.Equal(t, http.StatusOK, d.call(t, "GET", fmt.Sprintf("%s/api/cases/%d", base, id), agent, nil, &p))
			assert.Equal(t, id, p.Case.ID)
			assert.Len(t, p.Messages, p.Case.MessageCount)
			assert.Equal(t, schema.KindRequester, p.Messages[0].Kind)
			for i := 1; i < len(p.Messages); i++ {
				assert.Less(t, p.Messages[i-1].ID, p.Messages[i].ID)
			}
			assert.Equal(t, unit, p.Unit.ID)
			assert.Regexp(t, `^#[0-9a-f]{6}$`, p.Unit.BrandColor)
			assert.NotEmpty(t, p.Unit.LogoURL)
			assert.Len(t, p.CannedReplies, d.pop.Spec.CannedPerUnit)
			assert.Empty(t, p.Viewers)

			assert.Equal(t, http.StatusNotFound, d.call(t, "GET", fmt.Sprintf("%s/api/cases/%d", base, other), agent, nil, nil))
			assert.Equal(t, http.StatusNotFound, d.call(t, "GET", base+"/api/cases/999999999", agent, nil, nil))
			assert.Equal(t, http.StatusBadRequest, d.call(t, "GET", base+"/api/cases/x", agent, nil, nil))
		})
	}
}

// TestNoteAndReply checks that a note and a reply are added to the
// conversation and bump the case's activity; a reply also lands in the
// outbox (to the requester, from the unit) and sets a new case pending,
// which the (shared) counts show at once.
func TestNoteAndReply(t *testing.T) {
	d := seeded(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			_, base := d.start(t, func(c *server.Config) { m.set(c); c.Role = server.RoleWeb })
			var id, agent int64
			require.NoError(t, d.pool.QueryRow(context.Background(), `SELECT c.id, a.id FROM cases c JOIN agents a ON a.unit_id = c.unit_id
				WHERE c.status = 'new' AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.case_id = c.id) ORDER BY c.id, a.id LIMIT 1`).Scan(&id, &agent))
			var before counts
			require.Equal(t, http.StatusOK, d.call(t, "GET", base+"/api/counts", agent, nil, &before))

			var note struct {
				ID   int64
				Kind string
			}
			require.Equal(t, http.StatusCreated, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/notes", base, id), agent, map[string]string{"body": "checked the logs"}, &note))
			assert.Equal(t, schema.KindNote, note.Kind)
			require.Equal(t, http.StatusCreated, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/replies", base, id), agent, map[string]string{"body": "please restart"}, nil))

			var p casePage
			require.Equal(t, http.StatusOK, d.call(t, "GET", fmt.Sprintf("%s/api/cases/%d", base, id), agent, nil, &p))
			n := len(p.Messages)
			require.GreaterOrEqual(t, n, 3)
			assert.Equal(t, note.ID, p.Messages[n-2].ID)
			assert.Equal(t, "checked the logs", p.Messages[n-2].Body)
			assert.Equal(t, schema.KindReply, p.Messages[n-1].Kind)
			assert.Equal(t, agent, *p.Messages[n-1].AgentID)
			assert.Equal(t, n, p.Case.MessageCount)
			assert.Equal(t, schema.StatusPending, p.Case.Status)
			assert.WithinDuration(t, time.Now(), p.Case.LastActivityAt, time.Minute)

			var to, subject, body string
			require.NoError(t, d.pool.QueryRow(context.Background(), `SELECT to_email, subject, body FROM outbox WHERE case_id = $1 AND sent_at IS NULL`, id).Scan(&to, &subject, &body))
			assert.Contains(t, to, "@acct")
			assert.Equal(t, fmt.Sprintf("Re: %s [#%d]", p.Case.Subject, id), subject)
			assert.True(t, strings.HasPrefix(body, "please restart\n\n"+p.Unit.Signature[:5]), body)
			assert.Equal(t, int64(1), d.count(t, `SELECT count(*) FROM outbox WHERE case_id = $1`, id), "the note is not mailed")

			// The counts follow: one new case fewer, one pending more.
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				var after counts
				require.Equal(c, http.StatusOK, d.call(t, "GET", base+"/api/counts", agent, nil, &after))
				assert.Equal(c, before.ByStatus["new"]-1, after.ByStatus["new"])
				assert.Equal(c, before.ByStatus["pending"]+1, after.ByStatus["pending"])
			}, 5*time.Second, 20*time.Millisecond)

			assert.Equal(t, http.StatusBadRequest, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/notes", base, id), agent, map[string]string{"body": "  "}, nil))
			assert.Equal(t, http.StatusBadRequest, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/notes", base, id), agent, []int{1}, nil))
			other := d.count(t, `SELECT id FROM cases WHERE unit_id <> $1 LIMIT 1`, d.pop.Spec.UnitOf(agent))
			assert.Equal(t, http.StatusNotFound, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/replies", base, other), agent, map[string]string{"body": "x"}, nil))
		})
	}
}
