package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPathsUseModuleRoot(t *testing.T) {
	ext := ".json"
	if testing.Short() { // a -short run is another experiment, with files of its own
		ext = ".short.json"
	}
	res, gold, err := ResultPaths("TestLoad_Smoke/users=50")
	require.NoError(t, err)
	root, err := ModuleRoot()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "testdata/results/TestLoad_Smoke/users=50"+ext), res)
	assert.Equal(t, filepath.Join(root, "testdata/baselines/TestLoad_Smoke/users=50"+ext), gold)
	res, _, err = ResultPaths("TestLoad_Plain")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "testdata/results/TestLoad_Plain/run"+ext), res)
}

// A module whose baselines are still in testdata/golden keeps them there
// until it has a testdata/baselines; the environment overrides both.
func TestBaselinesOfAnOlderLayout(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644))
	t.Chdir(root)
	t.Setenv("LOADTEST_BASELINE_DIR", "")
	t.Setenv("LOADTEST_GOLDEN_DIR", "")
	base := func() string {
		_, b, err := ResultPaths("TestLoad_X/run")
		require.NoError(t, err)
		return filepath.Dir(filepath.Dir(b))
	}
	assert.Equal(t, filepath.Join(root, "testdata", "baselines"), base(), "a new module")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "testdata", "golden"), 0o755))
	assert.Equal(t, filepath.Join(root, "testdata", "golden"), base(), "only the older directory")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "testdata", "baselines"), 0o755))
	assert.Equal(t, filepath.Join(root, "testdata", "baselines"), base(), "both")
	t.Setenv("LOADTEST_GOLDEN_DIR", "/elsewhere/golden")
	assert.Equal(t, "/elsewhere/golden", base())
	t.Setenv("LOADTEST_BASELINE_DIR", "/elsewhere/baselines")
	assert.Equal(t, "/elsewhere/baselines", base())
}

func TestLogDirBesideTheResult(t *testing.T) {
	dir, err := LogDir("TestLoad_Smoke/backend=local/db=postgres")
	require.NoError(t, err)
	res, _, err := ResultPaths("TestLoad_Smoke/backend=local/db=postgres")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(res, ".json")+".logs", dir)
}

func TestWriteAtomicLeavesNoTemporaryFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "a.json")
	require.NoError(t, WriteAtomic(path, []byte("one")))
	require.NoError(t, WriteAtomic(path, []byte("two")))
	entries, err := filepath.Glob(filepath.Join(dir, "sub", "*"))
	require.NoError(t, err)
	assert.Equal(t, []string{path}, entries, "only the file itself, no .tmp- leftovers")
	require.FileExists(t, path)
}

func TestSafeName(t *testing.T) {
	assert.Equal(t, "TestLoad_X/a=b_c_d", SafeName("TestLoad_X/a=b c:d"))
}

// Supersede moves every file of the result before aside, and only its.
func TestSupersedeMovesTheRunBeforeAside(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "-"
		}
		return string(b)
	}
	path := filepath.Join(dir, "run.json")
	require.NoError(t, Supersede(path), "nothing there yet")
	write("run.json", "one")
	write("run.md", "one md")
	write("run.logs/relay.log", "one log")
	write("run.short.json", "short")
	write("runner.json", "another test")
	require.NoError(t, Supersede(path))
	assert.Equal(t, "-", read("run.json"))
	assert.Equal(t, "-", read("run.md"))
	assert.Equal(t, "-", read("run.logs/relay.log"))
	assert.Equal(t, "one", read("run.previous.json"))
	assert.Equal(t, "one md", read("run.previous.md"))
	assert.Equal(t, "one log", read("run.previous.logs/relay.log"))
	assert.Equal(t, "short", read("run.short.json"), "a -short run's result is another's")
	assert.Equal(t, "another test", read("runner.json"))

	// The next run: only one generation is kept.
	write("run.json", "two")
	write("run.logs/relay.log", "two log")
	require.NoError(t, Supersede(path))
	assert.Equal(t, "two", read("run.previous.json"))
	assert.Equal(t, "two log", read("run.previous.logs/relay.log"))
	assert.Equal(t, "-", read("run.previous.md"), "the md of the run before last went with it")
}
