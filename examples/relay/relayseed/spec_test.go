package relayseed_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
)

func TestSpecValidateRejectsBadInput(t *testing.T) {
	ok := relayseed.Spec{Secret: testSecret}
	for _, tc := range []struct {
		name   string
		mutate func(*relayseed.Spec)
		want   string // in the error
	}{
		// Sizes below zero: zero takes the default, below is a mistake.
		{"field=Workspaces", func(s *relayseed.Spec) { s.Workspaces = -1 }, "Workspaces is -1"},
		{"field=UsersPerWorkspace", func(s *relayseed.Spec) { s.UsersPerWorkspace = -5 }, "UsersPerWorkspace is -5"},
		{"field=ConnectorsPerUser", func(s *relayseed.Spec) { s.ConnectorsPerUser = -1 }, "ConnectorsPerUser is -1"},
		{"field=UsageRows", func(s *relayseed.Spec) { s.UsageRows = -1 }, "UsageRows is -1"},
		{"field=EventsRows", func(s *relayseed.Spec) { s.EventsRows = -1 }, "EventsRows is -1"},
		{"field=Days", func(s *relayseed.Spec) { s.Days = -30 }, "Days is -30"},
		// Each connector gets at least one tool.
		{"connectors>tools", func(s *relayseed.Spec) { s.ConnectorsPerUser = 4; s.Tools = []string{"a", "b", "c"} }, "only 3 tools"},
		// An explicitly empty catalog is not the default one.
		{"tools=empty", func(s *relayseed.Spec) { s.Tools = []string{} }, "Tools is empty"},
		// Tool names must be usable as <connector>__<tool>.
		{"tools=separator", func(s *relayseed.Spec) { s.Tools = []string{"a__b"} }, `contains "__"`},
		{"tools=duplicate", func(s *relayseed.Spec) { s.Tools = []string{"a", "a"} }, "listed twice"},
		{"tools=blank", func(s *relayseed.Spec) { s.Tools = []string{""} }, "Tools[0] is empty"},
		// The secret is required: tokens derive from it.
		{"secret=empty", func(s *relayseed.Spec) { s.Secret = nil }, "Secret is empty"},
		// The upstream URL must be usable by the relay.
		{"upstream=relative", func(s *relayseed.Spec) { s.UpstreamURL = "/mcp" }, "UpstreamURL"},
		{"upstream=scheme", func(s *relayseed.Spec) { s.UpstreamURL = "ftp://x/mcp" }, "UpstreamURL"},
		// Limits catch typos that would not fit in memory.
		{"users=too-many", func(s *relayseed.Spec) { s.Workspaces = 10_000; s.UsersPerWorkspace = 1_000 }, "above the limit"},
		{"days=too-many", func(s *relayseed.Spec) { s.Days = 100_000 }, "Days is 100000, above the limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.mutate(&s)
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			_, err = s.Population()
			assert.Error(t, err, "Population validates too")
		})
	}
	require.NoError(t, ok.Validate(), "the zero spec with a secret is valid")
}

func TestSpecValidateJoinsEveryProblem(t *testing.T) {
	err := relayseed.Spec{Workspaces: -1, Days: -1}.Validate()
	require.Error(t, err)
	for _, want := range []string{"Workspaces is -1", "Days is -1", "Secret is empty"} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestSpecHash(t *testing.T) {
	base := relayseed.Spec{Secret: testSecret, UsageRows: 100}
	h := base.Hash()
	assert.Len(t, h, 32)

	t.Run("secret=excluded", func(t *testing.T) {
		s := base
		s.Secret = []byte("other")
		assert.Equal(t, h, s.Hash())
	})
	t.Run("defaults=explicit", func(t *testing.T) {
		s := base
		s.Name, s.Workspaces, s.UsersPerWorkspace, s.ConnectorsPerUser = relayseed.DefaultName, 1, 10, 5
		s.Tools, s.UpstreamURL, s.Days, s.End = relayseed.DefaultTools(), relayseed.DefaultUpstreamURL, 30, relayseed.DefaultEnd
		assert.Equal(t, h, s.Hash(), "spelling out the defaults is the same spec")
	})
	t.Run("end=timezone", func(t *testing.T) {
		s := base
		s.End = relayseed.DefaultEnd.In(time.FixedZone("X", 3600)).Add(300 * time.Nanosecond)
		assert.Equal(t, h, s.Hash(), "End is compared in UTC at microsecond precision")
	})
	for _, tc := range []struct {
		name   string
		mutate func(*relayseed.Spec)
	}{
		{"field=Name", func(s *relayseed.Spec) { s.Name = "x" }},
		{"field=Workspaces", func(s *relayseed.Spec) { s.Workspaces = 2 }},
		{"field=UsersPerWorkspace", func(s *relayseed.Spec) { s.UsersPerWorkspace = 11 }},
		{"field=ConnectorsPerUser", func(s *relayseed.Spec) { s.ConnectorsPerUser = 4 }},
		{"field=Tools", func(s *relayseed.Spec) { s.Tools = []string{"a", "b", "c", "d", "e"} }},
		{"field=UpstreamURL", func(s *relayseed.Spec) { s.UpstreamURL = "http://127.0.0.1:1/mcp" }},
		{"field=UsageRows", func(s *relayseed.Spec) { s.UsageRows = 101 }},
		{"field=EventsRows", func(s *relayseed.Spec) { s.EventsRows = 1 }},
		{"field=Days", func(s *relayseed.Spec) { s.Days = 7 }},
		{"field=End", func(s *relayseed.Spec) { s.End = relayseed.DefaultEnd.Add(time.Microsecond) }},
		{"field=Seed", func(s *relayseed.Spec) { s.Seed = 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base
			tc.mutate(&s)
			assert.NotEqual(t, h, s.Hash())
		})
	}
}

func TestSpecPrintsNoSecret(t *testing.T) {
	s := relayseed.Published
	s.Secret = []byte("hunter2-hunter2")
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%d"} {
		got := fmt.Sprintf(verb, s)
		assert.NotContains(t, got, "hunter2", verb)
		assert.NotContains(t, got, "68756e74", verb)
	}
	assert.Contains(t, s.String(), "UsageRows:500000")
	assert.Contains(t, s.String(), "Secret:[redacted]")
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "hunter2")
	assert.NotContains(t, strings.ToLower(string(b)), "secret")
	pop, err := s.Population()
	require.NoError(t, err)
	assert.NotContains(t, fmt.Sprintf("%v %+v %s", pop, pop, pop.String()), "hunter2")
}

func TestPresetsAreValidAndSized(t *testing.T) {
	for _, tc := range []struct {
		name              string
		spec              relayseed.Spec
		users, usage, evs int
	}{
		// Seeds in well under a second.
		{"preset=Smoke", relayseed.Smoke, 10, 2_000, 200},
		// The published measurement: ~500k calls over 30 days.
		{"preset=Published", relayseed.Published, 10_000, 500_000, 50_000},
		// The helpdesk's 3,000 agents, 200k cases, 1M messages.
		{"preset=Helpdesk", relayseed.Helpdesk, 3_000, 200_000, 1_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			s.Secret = testSecret
			pop, err := s.Population()
			require.NoError(t, err)
			assert.Len(t, pop.Users, tc.users)
			assert.Equal(t, tc.usage, pop.Spec.UsageRows)
			assert.Equal(t, tc.evs, pop.Spec.EventsRows)
		})
	}
	assert.Nil(t, relayseed.Smoke.Secret, "presets carry no secret")
}
