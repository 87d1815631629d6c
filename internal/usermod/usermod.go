// Package usermod makes throwaway Go modules for tests: a team's own module
// depending on Headroom through a replace directive to this checkout, as
// its load tests would, built offline from the module cache that building
// Headroom filled.
package usermod

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Module is a throwaway module in a temporary directory.
type Module struct {
	// Dir is the module's root.
	Dir string
	t   testing.TB
}

// New creates module path in a temporary directory of t, requiring Headroom
// from the checkout at root (a replace directive) and every module
// Headroom requires, at Headroom's versions, with this checkout's go.sum,
// and writes files (path relative to the module root → content). The
// module's build list is then Headroom's, so it builds from what building
// Headroom put in the module cache: no download, and no `go mod tidy`,
// which would need modules no build uses (a cold cache lacks them). It
// fails the test when any of that fails.
func New(t testing.TB, root, path string, files map[string]string) *Module {
	t.Helper()
	m := &Module{Dir: t.TempDir(), t: t}
	edit := exec.Command("go", "mod", "edit", "-json")
	edit.Dir = root
	out, err := edit.Output()
	if err != nil {
		t.Fatalf("go mod edit -json in %s: %v", root, err)
	}
	var gomod struct {
		Require []struct{ Path, Version string }
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "module %s\n\ngo 1.26.0\n\nrequire github.com/headroom-dev/headroom v0.0.0\n\nrequire (\n", path)
	for _, r := range gomod.Require {
		fmt.Fprintf(&b, "\t%s %s // indirect\n", r.Path, r.Version)
	}
	fmt.Fprintf(&b, ")\n\nreplace github.com/headroom-dev/headroom => %s\n", root)
	m.Write("go.mod", b.String())
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	m.Write("go.sum", string(sum))
	for name, content := range files {
		m.Write(name, content)
	}
	return m
}

// Write writes a file of the module, creating its directory.
func (m *Module) Write(name, content string) {
	m.t.Helper()
	p := filepath.Join(m.Dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		m.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		m.t.Fatal(err)
	}
}

// Go runs the go command in the module, offline (GOPROXY=off: everything
// comes from the module cache), with env added, and returns its combined
// output.
func (m *Module) Go(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = m.Dir
	cmd.Env = append(append(os.Environ(), "GOPROXY=off", "GOWORK=off"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
