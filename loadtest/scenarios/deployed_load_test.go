//go:build load

package scenarios

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/prom"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// TestDeployedSystem runs the gateway knee (-short) against a system it
// did not start, as a team runs it against its staging deployment: a
// relay behind Caddy with its PostgreSQL and mock upstream, started here
// first as "the deployment", then named by LOADTEST_TARGET_URL and its
// companions. The knee must start nothing of its own, seed the
// deployment's database, set its upstream's behaviour, check first that
// the relay sees each user's address, load the deployment's relay (its own
// request counter grows by the requests answered) and record the system as
// deployed, its shape unknown.
func TestDeployedSystem(t *testing.T) {
	if !testing.Short() {
		t.Skip("the deployed mode, checked at -short size; a full knee against a deployment is TestLoad_GatewayKnee with LOADTEST_TARGET_URL")
	}
	dep := fixtures.Start(t, fixtures.WithTarget(relayload.Service()), fixtures.WithDatabase(fixtures.Postgres),
		fixtures.WithTargetEnv(relayEnv), fixtures.WithConnections(200))
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, dep.CACertPEM, 0o600))
	t.Setenv(fixtures.TargetURLEnv, dep.URL) // Caddy, over https: the deployment's entry point
	t.Setenv(fixtures.CAFileEnv, ca)
	t.Setenv(fixtures.DatabaseURLEnv, dep.DatabaseURL)
	t.Setenv(fixtures.UpstreamURLEnv, dep.UpstreamURL)
	t.Setenv(fixtures.UpstreamFromTargetEnv, dep.UpstreamURLFromTarget)
	t.Setenv(fixtures.UpstreamTokenEnv, dep.Upstream.Token)
	served := func() float64 {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		ms, err := (&prom.Sampler{URL: dep.TargetURL + "/metrics", Component: "relay",
			Series: []prom.Series{{Metric: "relay_http_requests_total", Name: "requests"}}}).Sample(ctx, time.Now())
		require.NoError(t, err)
		require.Len(t, ms, 1)
		return ms[0].Value
	}
	before := served()

	var res *loadtest.Result
	// One probe: the deployed mode, not the search, is what is checked
	// (TestLoad_GatewayKnee's -short run checks the search's probes).
	plan := loadtest.Knee{Start: 20, Factor: 2, Max: 20, Ramp: 2 * time.Second, Hold: 6 * time.Second}
	t.Run("knee", func(t *testing.T) { res = gatewayKnee(t, deployedDB, handshakeEra, podSetup{plan: &plan}) })
	require.NotNil(t, res, "the knee against the deployment ran")

	sys := res.Environment.System
	assert.Equal(t, fixtures.BackendDeployed, sys.Backend)
	assert.True(t, sys.ShapeUnknown())
	assert.Equal(t, dep.URL, sys.Deployed)
	assert.Zero(t, sys.CPUs, "a deployment's limits are unknown, not the default pod's")
	var started []string
	for _, c := range sys.Components {
		started = append(started, c.Name+" ("+c.Role+")")
		assert.NotEqual(t, result.RoleDatabase, c.Role, "the deployment's database is its own: %v", sys.Components)
		assert.NotEqual(t, result.RoleProxy, c.Role, "the deployment's proxy is its own: %v", sys.Components)
	}
	assert.ElementsMatch(t, []string{"relay (target)", "mockupstream (upstream)"}, started, "the run watched the deployment's relay and upstream, started nothing")
	assert.Contains(t, res.Environment.Class, "deployed "+dep.URL, "a deployment compares with itself only")
	assert.True(t, res.CapacityLowerBound && res.Capacity >= 20, "the -short knee held its top against the deployment: %s", res.CapacityText())

	var ok int64 // requests answered, not observed samples (stream events)
	for _, s := range res.Steps {
		for _, k := range s.Kinds {
			if !k.Observed {
				ok += k.Outcomes[result.OK]
			}
		}
	}
	grew := served() - before
	assert.GreaterOrEqual(t, grew, float64(ok), "the deployment's relay answered the run's %d successful requests (its counter grew by %.0f)", ok, grew)
	md := res.Markdown()
	assert.Contains(t, md, "the system deployed at "+dep.URL+", its shape unknown")
	assert.False(t, strings.Contains(md, "target pinned to"), "no limits claimed for a deployment")
}
