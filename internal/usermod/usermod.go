// Package usermod makes throwaway Go modules for tests: a team's own module
// depending on Headroom through a replace directive to this checkout, as
// its load tests would, built offline from the module cache.
package usermod

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Module is a throwaway module in a temporary directory.
type Module struct {
	// Dir is the module's root.
	Dir string
	t   testing.TB
}

// New creates module path in a temporary directory of t, requiring Headroom
// from the checkout at root (a replace directive) with this checkout's
// go.sum, writes files (path relative to the module root → content) and
// tidies it offline. It fails the test when any of that fails.
func New(t testing.TB, root, path string, files map[string]string) *Module {
	t.Helper()
	m := &Module{Dir: t.TempDir(), t: t}
	m.Write("go.mod", fmt.Sprintf("module %s\n\ngo 1.26.0\n\nrequire github.com/headroom-dev/headroom v0.0.0\n\nreplace github.com/headroom-dev/headroom => %s\n", path, root))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	m.Write("go.sum", string(sum))
	for name, content := range files {
		m.Write(name, content)
	}
	if out, err := m.Go(context.Background(), []string{"GOFLAGS=-mod=mod"}, "mod", "tidy"); err != nil {
		t.Fatalf("go mod tidy: %v\n%s", err, out)
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
