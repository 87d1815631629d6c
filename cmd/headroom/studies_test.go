package main

import (
	"bytes"
	"errors"
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
