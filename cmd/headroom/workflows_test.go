package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWorkflowsListEveryScenario: every load scenario in the repository
// (a TestLoad_ function in a *_load_test.go file, the example modules'
// too) has a row in the nightly's matrix and in the baselines workflow's,
// so that a new scenario is guarded unattended from the day it lands.
func TestWorkflowsListEveryScenario(t *testing.T) {
	root := filepath.Join("..", "..")
	decl := regexp.MustCompile(`(?m)^func (TestLoad_\w+)\(t \*testing\.T\)`)
	var scenarios []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_load_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			scenarios = append(scenarios, m[1])
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, len(scenarios), 10, "the walk found the scenarios")
	for _, wf := range []string{"nightly.yml", "baselines.yml"} {
		b, err := os.ReadFile(filepath.Join(root, ".github", "workflows", wf))
		require.NoError(t, err)
		for _, s := range scenarios {
			assert.Regexp(t, `run: `+s+`[/,} ]`, string(b), "%s has no matrix row for %s: add `- { run: %s, budget: N }` (dir: and pkg: for an example module)", wf, s, s)
		}
	}
}
