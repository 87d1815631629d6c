package study

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample() *Study {
	s := &Study{Name: "TestLoad_Forward", Title: "Forward path", Reading: "Read both columns together.",
		Command: "go test -tags load -run TestLoad_Forward ./loadtest/scenarios/",
		Lab:     Lab{CPU: "Test CPU", Cores: 2, OS: "Debian", Kernel: "6.1", Go: "go1.26", Target: "relay 0.1.0", Generator: Generator}}
	t := s.Table("Achieved rate (slow upstream)",
		Column{Key: "runtime", Title: "Runtime"}, Column{Key: "achieved", Title: "Achieved (ok/s)", Digits: 1},
		Column{Key: "sent", Title: "Sent"})
	t.Add(Row{Cell: "upstream=slow/mode=async", Labels: map[string]string{"runtime": "async"}, Figures: map[string]float64{"achieved": 190.25, "sent": 1000}})
	t.Add(Row{Cell: "upstream=slow/mode=sync", Baseline: "upstream=slow/mode=async", Labels: map[string]string{"runtime": "sync|4"}, Figures: map[string]float64{"achieved": 20}})
	return s
}

func TestPage(t *testing.T) {
	page := Page(sample())
	for _, want := range []string{
		Portability,
		"| CPU | Test CPU |",
		"| Loadgen | " + Generator + " |",
		"### Achieved rate (slow upstream)",
		"| Cell | Read against | Runtime | Achieved (ok/s) | Sent |",
		"| upstream=slow/mode=async | **baseline** | async | 190.2 | 1000 |",                            // the baseline is marked
		"| upstream=slow/mode=sync | upstream=slow/mode=async (×0.11 achieved) | sync\\|4 | 20.0 | – |", // the ratio to its baseline, pipes escaped, a missing figure a dash
	} {
		assert.Contains(t, page, want)
	}
	assert.NotContains(t, page, "did not hold")

	s := sample()
	s.Problems = []string{"sync answered as much as async"}
	assert.Contains(t, Page(s), "**The study's reading did not hold:**\n\n- sync answered as much as async")
	assert.ErrorContains(t, s.Err(), "sync answered")
	assert.NoError(t, sample().Err())
}

func TestPageLabs(t *testing.T) {
	a, b := sample(), sample()
	b.Name = "TestLoad_Drain"
	one := Page(a, b)
	assert.Equal(t, 1, strings.Count(one, "## Lab profile"), "one lab, one profile table")
	b.Lab.CPU = "Other CPU"
	two := Page(a, b)
	assert.Contains(t, two, "## Lab profile 1")
	assert.Contains(t, two, "## Lab profile 2")
	assert.Contains(t, two, "lab 2")
}

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x", "study.json")
	s := sample()
	require.NoError(t, s.Write(path))
	got, err := Read(path)
	require.NoError(t, err)
	assert.Equal(t, s.Tables, got.Tables)
	assert.Equal(t, SchemaVersion, got.Schema)
	assert.FileExists(t, filepath.Join(filepath.Dir(path), "study.md"))

	_, err = Read(filepath.Join(t.TempDir(), "missing.json"))
	assert.Error(t, err)
}

func TestWritePageWithCSVs(t *testing.T) {
	dir := t.TempDir()
	s := sample()
	s.Short = true
	require.NoError(t, WritePage(dir, s))
	page, err := os.ReadFile(filepath.Join(dir, PageFile))
	require.NoError(t, err)
	assert.Contains(t, string(page), "| upstream=slow/mode=async | **baseline** | async | 190.2 | 1000 |")
	assert.Contains(t, string(page), "CSV: [TestLoad_Forward.short-1.csv](TestLoad_Forward.short-1.csv)", "each table links its CSV")
	assert.NotContains(t, Page(s), "CSV:", "a page printed alone links no file")
	csv, err := os.ReadFile(filepath.Join(dir, "TestLoad_Forward.short-1.csv"))
	require.NoError(t, err)
	assert.Equal(t, "Cell,Read against,Runtime,Achieved (ok/s),Sent\n"+
		"upstream=slow/mode=async,,async,190.25,1000\n"+
		"upstream=slow/mode=sync,upstream=slow/mode=async,sync|4,20,\n", string(csv),
		"figures at full precision, an empty field where a cell has none")
}
