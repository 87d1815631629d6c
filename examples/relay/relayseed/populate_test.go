package relayseed_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/seed"
)

func TestSpecForUsers(t *testing.T) {
	for _, tc := range []struct {
		workspaces, users, perWorkspace int
	}{
		{1, 800, 800}, // one workspace holds them all
		{3, 800, 267}, // rounded up: 801 users
		{0, 5, 5},     // the default single workspace
		{4, 1, 1},     // at least one per workspace
	} {
		s := relayseed.Smoke
		s.Workspaces = tc.workspaces
		got := s.ForUsers(tc.users)
		assert.Equal(t, tc.perWorkspace, got.UsersPerWorkspace, "%d users in %d workspaces", tc.users, tc.workspaces)
		assert.Equal(t, s.ConnectorsPerUser, got.ConnectorsPerUser, "other fields kept")
	}
}

// Populate seeds through a URL and hands modeled users their tokens in
// turn.
func TestPopulateAndTokenOf(t *testing.T) {
	_, _, path := newSQLite(t, true)
	spec := relayseed.Smoke.ForUsers(3)
	spec.Secret = seed.Secret("populate")
	pop := relayseed.Populate(t, "sqlite:"+path, spec)
	require.Len(t, pop.Users, 3)
	assert.Equal(t, pop.Token(pop.Users[0].ID), pop.TokenOf(0))
	assert.Equal(t, pop.Token(pop.Users[1].ID), pop.TokenOf(4), "user 4 of a load test is the population's second")
}
