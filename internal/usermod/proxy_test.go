package usermod

import (
	"archive/zip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GoSum hashes a release as the go command does: a module from the module
// cache, read back as a Release, gets the lines this repository's go.sum
// holds for it.
func TestGoSumMatchesTheGoCommand(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dl := filepath.Join(strings.TrimSpace(string(out)), "cache", "download", "github.com", "docker", "go-units", "@v")
	z, err := zip.OpenReader(filepath.Join(dl, "v0.5.0.zip"))
	if err != nil {
		t.Skipf("github.com/docker/go-units v0.5.0 is not in the module cache: %v", err)
	}
	defer z.Close()
	r := Release{Path: "github.com/docker/go-units", Version: "v0.5.0", Files: map[string]string{}}
	for _, f := range z.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b := new(strings.Builder)
		if _, err := io.Copy(b, rc); err != nil {
			t.Fatal(err)
		}
		rc.Close()
		r.Files[strings.TrimPrefix(f.Name, "github.com/docker/go-units@v0.5.0/")] = b.String()
	}
	mod, err := os.ReadFile(filepath.Join(dl, "v0.5.0.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// go-units predates modules: its tree holds no go.mod, the proxy
	// makes one up.
	tree := strings.SplitN(GoSum(r), "\n", 2)[0]
	r.Files = map[string]string{"go.mod": string(mod)}
	gomod := strings.SplitN(GoSum(r), "\n", 3)[1]
	sum, err := os.ReadFile("../../go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{tree, gomod} {
		if !strings.Contains(string(sum), line+"\n") {
			t.Errorf("%q is not in go.sum", line)
		}
	}
}
