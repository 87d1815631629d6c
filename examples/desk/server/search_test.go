package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/desk/server"
)

// TestSearch finds a case by words of its subject, by a prefix of its
// requester's name and by its requester's email domain, only within the
// agent's unit; an empty query is 400.
func TestSearch(t *testing.T) {
	d := seeded(t)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			_, base := d.start(t, m.set)
			agent := int64(2)
			unit := d.pop.Spec.UnitOf(agent)
			var id int64
			var subject, name, email string
			require.NoError(t, d.pool.QueryRow(context.Background(), `SELECT id, subject, requester_name, requester_email FROM cases WHERE unit_id = $1 ORDER BY id DESC LIMIT 1`, unit).
				Scan(&id, &subject, &name, &email))
			words := strings.Fields(subject)
			last := strings.Fields(name)[1]
			search := func(q string) []caseRow {
				var ans struct{ Cases []caseRow }
				require.Equal(t, http.StatusOK, d.call(t, "GET", base+"/api/search?q="+url.QueryEscape(q), agent, nil, &ans))
				for _, c := range ans.Cases {
					assert.Equal(t, unit, c.UnitID)
				}
				return ans.Cases
			}
			has := func(cs []caseRow) bool {
				for _, c := range cs {
					if c.ID == id {
						return true
					}
				}
				return false
			}
			for _, q := range []string{
				words[len(words)-1] + " " + words[len(words)-2] + " " + last, // subject and requester
				strings.ToUpper(last[:4]) + " " + words[len(words)-1],        // a prefix, any case
				strings.Split(email, "@")[1] + " " + words[len(words)-1],     // the email's domain
			} {
				assert.True(t, has(search(q)), "query %q should find case %d (%s, %s <%s>)", q, id, subject, name, email)
			}
			assert.Empty(t, search("zzqx"))
			assert.Equal(t, http.StatusBadRequest, d.call(t, "GET", base+"/api/search?q=+%21", agent, nil, nil))
			// Another unit's agent does not find it.
			var ans struct{ Cases []caseRow }
			require.Equal(t, http.StatusOK, d.call(t, "GET", base+"/api/search?q="+url.QueryEscape(subject+" "+name), agent+1, nil, &ans))
			for _, c := range ans.Cases {
				assert.NotEqual(t, id, c.ID)
			}
		})
	}
}

// TestPresence checks the heartbeat: an agent sees the others of its
// unit viewing the case, not itself; a heartbeat older than
// DESK_PRESENCE_TTL no longer counts and the worker deletes it; the case
// page lists the viewers; leaving removes one at once.
func TestPresence(t *testing.T) {
	d := seeded(t)
	_, base := d.start(t, func(c *server.Config) { c.PresenceTTL = 600 * time.Millisecond })
	units := int64(d.pop.Spec.Units)
	a, b, c := int64(1), 1+units, 1+2*units
	id := d.count(t, `SELECT id FROM cases WHERE unit_id = 1 ORDER BY id LIMIT 1`)
	type viewers struct {
		Viewers []struct {
			AgentID int64 `json:"agent_id"`
			Name    string
		}
	}
	beat := func(agent int64) []int64 {
		var v viewers
		require.Equal(t, http.StatusOK, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/presence", base, id), agent, nil, &v))
		var ids []int64
		for _, x := range v.Viewers {
			assert.NotEmpty(t, x.Name)
			ids = append(ids, x.AgentID)
		}
		return ids
	}
	assert.Empty(t, beat(a))
	assert.Equal(t, []int64{a}, beat(b))
	assert.Equal(t, []int64{a, b}, beat(c))
	var p casePage
	require.Equal(t, http.StatusOK, d.call(t, "GET", fmt.Sprintf("%s/api/cases/%d", base, id), a, nil, &p))
	assert.Len(t, p.Viewers, 3)

	assert.Equal(t, http.StatusNoContent, d.call(t, "DELETE", fmt.Sprintf("%s/api/cases/%d/presence", base, id), c, nil, nil))
	assert.Equal(t, []int64{a}, beat(b))
	// a stops; after the TTL only b is there, and the worker removes a's row.
	time.Sleep(400 * time.Millisecond)
	beat(b)
	time.Sleep(300 * time.Millisecond)
	assert.Equal(t, []int64{b}, beat(c))
	require.Eventually(t, func() bool {
		return d.count(t, `SELECT count(*) FROM presence WHERE agent_id = $1`, a) == 0
	}, 5*time.Second, 20*time.Millisecond)

	other := d.count(t, `SELECT id FROM cases WHERE unit_id = 2 LIMIT 1`)
	assert.Equal(t, http.StatusNotFound, d.call(t, "POST", fmt.Sprintf("%s/api/cases/%d/presence", base, other), a, nil, nil))
}
