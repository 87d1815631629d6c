package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/study"
)

// TestRenderStudies renders the page of every study under a results
// directory — one lab profile, each study's tables — and exits 1 when a
// study's reading failed.
func TestRenderStudies(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, problems ...string) string {
		s := &study.Study{Name: name, Title: name + " study", Lab: study.Lab{CPU: "Test CPU", Cores: 2, Generator: study.Generator},
			Problems: problems}
		s.Table("cells", study.Column{Key: "achieved", Title: "Achieved", Digits: 1}).
			Add(study.Row{Cell: "mode=async", Figures: map[string]float64{"achieved": 12}})
		p := filepath.Join(dir, name, "study.short.json")
		require.NoError(t, s.Write(p))
		return p
	}
	fwd := write("TestLoad_Forward")
	write("TestLoad_Drain")

	var out bytes.Buffer
	require.NoError(t, render([]string{"-studies", dir}, &out))
	page := out.String()
	assert.Contains(t, page, study.Portability)
	assert.Contains(t, page, "## TestLoad_Forward study")
	assert.Contains(t, page, "## TestLoad_Drain study")
	assert.Contains(t, page, "| mode=async | **baseline** | 12.0 |")

	out.Reset()
	require.NoError(t, render([]string{fwd}, &out), "a study file alone is recognised")
	assert.Contains(t, out.String(), "## TestLoad_Forward study")
	assert.NotContains(t, out.String(), "TestLoad_Drain")

	write("TestLoad_FeatureTax", "metrics_on: different")
	err := render([]string{"-studies", dir}, &out)
	var ee *exitError
	require.True(t, errors.As(err, &ee), "%v", err)
	assert.Equal(t, exitFail, ee.code, "a failed reading is exit 1")

	assert.ErrorContains(t, render([]string{"-studies", t.TempDir()}, &out), "no study file")
}

func TestRenderStudiesToADirectory(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	s := &study.Study{Name: "TestLoad_Forward", Title: "Forward", Lab: study.Lab{CPU: "Test CPU", Cores: 2, Generator: study.Generator}}
	s.Table("cells", study.Column{Key: "achieved", Title: "Achieved", Digits: 1}).
		Add(study.Row{Cell: "mode=async", Figures: map[string]float64{"achieved": 12.25}})
	require.NoError(t, s.Write(filepath.Join(src, "TestLoad_Forward", "study.json")))
	var stdout bytes.Buffer
	require.NoError(t, render([]string{"-studies", "-o", out, src}, &stdout))
	assert.Contains(t, stdout.String(), "1 CSV files")
	page, err := os.ReadFile(filepath.Join(out, study.PageFile))
	require.NoError(t, err)
	assert.Contains(t, string(page), "CSV: [TestLoad_Forward-1.csv](TestLoad_Forward-1.csv)")
	csv, err := os.ReadFile(filepath.Join(out, "TestLoad_Forward-1.csv"))
	require.NoError(t, err)
	assert.Contains(t, string(csv), "mode=async,,12.25")
	assert.ErrorContains(t, render([]string{"-o", out, filepath.Join(src, "x.json")}, &stdout), "-o is for -studies")
}

// TestReferenceStudiesCurrent: the committed reference page and its CSVs
// are what the committed study files render to (make reference-studies
// rewrites them), so that neither goes stale without the other.
func TestReferenceStudiesCurrent(t *testing.T) {
	ref := filepath.Join("..", "..", "testdata", "reference", "studies")
	out := t.TempDir()
	var stdout bytes.Buffer
	require.NoError(t, render([]string{"-studies", "-o", out, ref}, &stdout), "%s", stdout.String())
	made, err := os.ReadDir(out)
	require.NoError(t, err)
	require.NotEmpty(t, made)
	for _, f := range made {
		want, err := os.ReadFile(filepath.Join(out, f.Name()))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(ref, f.Name()))
		require.NoError(t, err, "%s is not committed: run make reference-studies", f.Name())
		assert.Equal(t, string(want), string(got), "%s is stale: run make reference-studies", f.Name())
	}
}
