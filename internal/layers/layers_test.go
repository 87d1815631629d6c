// Package layers keeps the framework apart from its demo products: a test
// of the module's import graph.
package layers_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// module is the module path; the framework's packages sit under it.
const module = "github.com/headroom-dev/headroom"

// framework are the packages a team's tests import: the core, the stack,
// the seeder, the mock upstream and the command line.
var framework = []string{"./loadtest/...", "./fixtures/...", "./seed/...", "./mockupstream/...", "./cmd/..."}

// productDeps returns the packages under examples/ that pkgs build on.
func productDeps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	return deps(t, module+"/examples/", pkgs...)
}

// The framework imports nothing under examples/: the reference products
// build on it, never the other way round, so a team's own service can be
// load-tested without the relay, the desk or their populations.
func TestFrameworkImportsNoProduct(t *testing.T) {
	assert.Empty(t, productDeps(t, framework...),
		"the framework must not import the example products; move the product-specific piece beside its product (e.g. examples/relay/relayseed) and keep the generic part in the framework")
}

// The check sees an import of a product when there is one.
func TestProductImportsAreSeen(t *testing.T) {
	assert.Contains(t, productDeps(t, "./examples/relay/relayseed"), module+"/examples/relay/schema")
}

// deps returns the packages pkgs build on whose path starts with prefix.
func deps(t *testing.T, prefix string, pkgs ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	require.NoError(t, err, "go list -deps %s", strings.Join(pkgs, " "))
	var got []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, prefix) {
			got = append(got, p)
		}
	}
	return got
}

// A stack does not pull in rendering: the HTML report (and gonum/plot
// under it) is a writer a test registers where it can be seen, in its
// TestMain, not a side effect of importing the fixtures.
func TestStackPullsNoRendering(t *testing.T) {
	assert.Empty(t, deps(t, module+"/loadtest/report", "./fixtures", "./loadtest"),
		"register report.WriteHTML with loadtest.RegisterWriter in a TestMain instead of importing loadtest/report for its side effect")
	assert.NotEmpty(t, deps(t, "gonum.org/v1/plot", "./loadtest/report"), "the check sees the plotting library where it is")
}

// The example products' binaries link no test machinery: a service is
// built into a FROM scratch image and measured, and the fixtures (with
// testcontainers under them) belong to its load tests, not to it.
func TestProductBinariesLinkNoFixtures(t *testing.T) {
	binaries := []string{"./examples/relay", "./examples/desk", "./examples/orch"}
	assert.Empty(t, deps(t, module+"/fixtures", binaries...), "keep fixtures out of the services (examples/internal/kit is for them; loadkit for their load tests)")
	assert.Empty(t, deps(t, "github.com/testcontainers/", binaries...))
	assert.NotEmpty(t, deps(t, module+"/fixtures", "./examples/desk/deskload"), "the check sees the fixtures where they are")
}
