package usermod

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Release is one version of a module that Proxy serves: its files (path
// relative to the module root → content), go.mod among them.
type Release struct {
	Path, Version string
	Files         map[string]string
}

// Proxy writes releases as a Go module proxy in a temporary directory of t
// (the layout `go help goproxy` describes: list, .info, .mod and .zip under
// <module>/@v/) and returns its file:// URL, so that a test can `go
// install` a third-party service at a version without a network: set
// GOPROXY to it (followed by the module cache, for Headroom's own
// requirements) and GOSUMDB=off, for these modules are in no checksum
// database.
func Proxy(t testing.TB, releases ...Release) string {
	t.Helper()
	dir := t.TempDir()
	versions := map[string][]string{}
	for _, r := range releases {
		if _, ok := r.Files["go.mod"]; !ok {
			t.Fatalf("usermod.Proxy: %s@%s has no go.mod", r.Path, r.Version)
		}
		v := filepath.Join(dir, escape(r.Path), "@v")
		if err := os.MkdirAll(v, 0o755); err != nil {
			t.Fatal(err)
		}
		info, _ := json.Marshal(map[string]any{"Version": r.Version, "Time": time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		write(t, filepath.Join(v, r.Version+".info"), info)
		write(t, filepath.Join(v, r.Version+".mod"), []byte(r.Files["go.mod"]))
		f, err := os.Create(filepath.Join(v, r.Version+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		z := zip.NewWriter(f)
		names := make([]string, 0, len(r.Files))
		for name := range r.Files {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			w, err := z.Create(r.Path + "@" + r.Version + "/" + name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte(r.Files[name]))
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		versions[r.Path] = append(versions[r.Path], r.Version)
	}
	for path, vs := range versions {
		write(t, filepath.Join(dir, escape(path), "@v", "list"), []byte(strings.Join(vs, "\n")+"\n"))
	}
	return "file://" + filepath.ToSlash(dir)
}

// GoSum returns go.sum lines for releases, as the go command would write
// them: each module's tree and its go.mod, hashed as "h1:" (the sha256 of
// a sorted list of the files' sha256 sums, in base64).
func GoSum(releases ...Release) string {
	var b strings.Builder
	for _, r := range releases {
		prefix := r.Path + "@" + r.Version + "/"
		tree := map[string]string{}
		for name, content := range r.Files {
			tree[prefix+name] = content
		}
		fmt.Fprintf(&b, "%s %s %s\n", r.Path, r.Version, hash1(tree))
		fmt.Fprintf(&b, "%s %s/go.mod %s\n", r.Path, r.Version, hash1(map[string]string{"go.mod": r.Files["go.mod"]}))
	}
	return b.String()
}

// hash1 is golang.org/x/mod/sumdb/dirhash.Hash1 of files.
func hash1(files map[string]string) string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%x  %s\n", sha256.Sum256([]byte(files[name])), name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// escape is a module path as a proxy spells it: each capital letter as '!'
// and its lower case.
func escape(path string) string {
	var b strings.Builder
	for _, r := range path {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

func write(t testing.TB, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
