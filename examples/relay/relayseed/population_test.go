package relayseed_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/mockupstream"
)

func TestPopulationLayout(t *testing.T) {
	s := relayseed.Spec{Workspaces: 3, UsersPerWorkspace: 4, ConnectorsPerUser: 3,
		Tools: []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6"}, Secret: testSecret}
	pop, err := s.Population()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 3}, pop.Workspaces)
	require.Len(t, pop.Users, 12)
	assert.False(t, pop.Applied)
	assert.Equal(t, s.Hash(), pop.Hash)

	connIDs := map[int64]bool{}
	for i, u := range pop.Users {
		assert.Equal(t, int64(i+1), u.ID, "ids dense from 1")
		assert.Equal(t, int64(i/4+1), u.WorkspaceID, "users workspace by workspace")
		assert.Equal(t, "user-"+strconv.FormatInt(u.ID, 10), u.Name)
		require.Len(t, u.Connectors, 3)
		for _, c := range u.Connectors {
			assert.False(t, connIDs[c.ID], "connector id %d repeats", c.ID)
			connIDs[c.ID] = true
		}
	}
	assert.Len(t, connIDs, 36)
	u := pop.Users[5]
	// Tools are dealt round-robin: connector k gets tools k, k+3, ….
	assert.Equal(t, []string{"t0", "t3", "t6"}, u.Connectors[0].Tools)
	assert.Equal(t, []string{"t1", "t4"}, u.Connectors[1].Tools)
	assert.Equal(t, []string{"t2", "t5"}, u.Connectors[2].Tools)
	assert.Equal(t, []string{"slack__t1", "slack__t4"}, u.Connectors[1].QualifiedTools())
	assert.Equal(t, relayseed.Token(testSecret, 6), pop.Token(u.ID))

	got, ok := pop.User(6)
	require.True(t, ok)
	assert.Equal(t, u.ID, got.ID)
	_, ok = pop.User(13)
	assert.False(t, ok, "no user past the end")
	_, ok = pop.User(0)
	assert.False(t, ok, "ids start at 1")
}

func TestConnectorNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for k := range relayseed.MaxConnectorsPerUser {
		n := relayseed.ConnectorName(k)
		require.False(t, seen[n], "connector name %q repeats at %d", n, k)
		seen[n] = true
	}
	assert.Equal(t, "github", relayseed.ConnectorName(0))
	assert.Equal(t, "github-2", relayseed.ConnectorName(16))
}

func TestMockToolsMatchTheMockUpstream(t *testing.T) {
	for _, n := range []int{1, 20, 150} {
		t.Run("count="+strconv.Itoa(n), func(t *testing.T) {
			var want []string
			for _, tool := range mockupstream.Tools(n) {
				want = append(want, tool.Name)
			}
			assert.Equal(t, want, relayseed.MockTools(n))
		})
	}
	assert.Equal(t, relayseed.MockTools(20), relayseed.DefaultTools())
}
