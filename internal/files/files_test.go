package files

import (
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
	assert.Equal(t, filepath.Join(root, "testdata/golden/TestLoad_Smoke/users=50"+ext), gold)
	res, _, err = ResultPaths("TestLoad_Plain")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "testdata/results/TestLoad_Plain/run"+ext), res)
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
