// Package files knows where Headroom's results live and writes them
// safely: the module root, a test's result, baseline and log paths, and
// atomic writes.
package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteAtomic writes b to path through a temporary file in the same
// directory renamed over path, so that a reader never sees half a file;
// it creates the directory.
func WriteAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ModuleRoot returns the directory of the go.mod that encloses the current
// directory: results and baselines live under its testdata/.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// ResultPaths returns where the result and the baseline of the test named name
// ("TestLoad_Smoke/users=50") live: testdata/results/<Test>/<sub>.json and
// testdata/baselines/<Test>/<sub>.json under the module root, or under
// LOADTEST_RESULTS_DIR and LOADTEST_BASELINE_DIR when set. A module whose
// baselines are still in testdata/golden (their directory before Headroom
// named them baselines) and has no testdata/baselines keeps them there;
// LOADTEST_GOLDEN_DIR is read when LOADTEST_BASELINE_DIR is not set. A test
// without subtests uses "run" as its file name. A -short run is another
// experiment than a full one: its files end in ".short.json".
func ResultPaths(name string) (result, baseline string, err error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", "", fmt.Errorf("loadtest: no go.mod above the working directory to anchor testdata/: %w", err)
	}
	resDir := envOr("LOADTEST_RESULTS_DIR", filepath.Join(root, "testdata", "results"))
	baselineDir := envOr("LOADTEST_BASELINE_DIR", envOr("LOADTEST_GOLDEN_DIR", baselineDir(root)))
	test, sub, ok := strings.Cut(name, "/")
	if !ok {
		sub = "run"
	}
	rel := filepath.Join(SafeName(test), SafeName(sub))
	if testing.Testing() && testing.Short() {
		rel += ".short"
	}
	rel += ".json"
	return filepath.Join(resDir, rel), filepath.Join(baselineDir, rel), nil
}

// LogDir returns where the components' logs of the test named name go:
// beside its result, testdata/results/<Test>/<sub>[.short].logs (see ResultPaths).
func LogDir(name string) (string, error) {
	res, _, err := ResultPaths(name)
	return strings.TrimSuffix(res, ".json") + ".logs", err
}

// baselineDir is the module's testdata/baselines, or testdata/golden where
// only that older directory exists.
func baselineDir(root string) string {
	dir := filepath.Join(root, "testdata", "baselines")
	old := filepath.Join(root, "testdata", "golden")
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if fi, err := os.Stat(old); err == nil && fi.IsDir() {
			return old
		}
	}
	return dir
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// SafeName keeps subtest levels as directories and replaces characters
// that do not belong in file names.
func SafeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '\\', ':', '*', '?', '"', '<', '>', '|', ' ':
			return '_'
		}
		return r
	}, s)
}

// Supersede makes way for a new run's result at jsonPath: the files of the
// run before — <base>.json and every <base>.<ext> beside it (its Markdown
// and HTML reports, its .logs and .profiles directories) — are renamed
// <base>.previous.<ext>, replacing the run before that, so that nothing of
// an older run stands under the new run's name while the new one is
// written. Files of other results sharing the prefix (<base>.short.json)
// are not touched. A result path with nothing there is not an error.
func Supersede(jsonPath string) error {
	base := strings.TrimSuffix(filepath.Base(jsonPath), ".json")
	dir := filepath.Dir(jsonPath)
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var ours []string
	for _, e := range entries {
		ext, ok := strings.CutPrefix(e.Name(), base+".")
		if ok && ext != "" && !strings.Contains(ext, ".") {
			ours = append(ours, ext)
		}
	}
	if len(ours) == 0 {
		return nil
	}
	for _, e := range entries {
		if ext, ok := strings.CutPrefix(e.Name(), base+".previous."); ok && !strings.Contains(ext, ".") {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for _, ext := range ours {
		if err := os.Rename(filepath.Join(dir, base+"."+ext), filepath.Join(dir, base+".previous."+ext)); err != nil {
			return err
		}
	}
	return nil
}
