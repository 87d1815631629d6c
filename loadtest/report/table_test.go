package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/report"
)

// TestTableBesideTheRunsAndInTheIndex: a side-by-side table is written as
// Markdown, CSV (for charting elsewhere) and JSON beside the results, and
// the index shows it with links to both; a row that does not match the
// header is refused before anything is written.
func TestTableBesideTheRunsAndInTheIndex(t *testing.T) {
	dir := t.TempDir()
	tb := report.Table{Title: "Standard vs Scale (seed 004)",
		Header: []string{"Agents", "Standard p95", "Scale p95"},
		Rows:   [][]string{{"idle", "–", "–"}, {"250", "38 ms", "41 ms"}, {"3,000", "124 ms", "62 ms | two servers"}},
		Note:   "Measured here: 2 cores."}
	stem := filepath.Join(dir, "TestLoad_Helpdesk", "setups")
	require.NoError(t, report.WriteTable(stem, tb))

	md, err := os.ReadFile(stem + ".md")
	require.NoError(t, err)
	assert.Contains(t, string(md), "## Standard vs Scale (seed 004)\n\n| Agents | Standard p95 | Scale p95 |\n| - | -: | -: |\n| idle | – | – |\n")
	assert.Contains(t, string(md), `| 3,000 | 124 ms | 62 ms \| two servers |`, "a | in a cell is escaped")
	c, err := os.ReadFile(stem + ".csv")
	require.NoError(t, err)
	assert.Equal(t, "Agents,Standard p95,Scale p95\nidle,–,–\n250,38 ms,41 ms\n\"3,000\",124 ms,62 ms | two servers\n", string(c))
	back, err := report.ReadTable(stem + report.TableSuffix)
	require.NoError(t, err)
	assert.Equal(t, tb, back)

	page, err := report.IndexHTML(dir)
	require.NoError(t, err)
	html := string(page)
	assert.Contains(t, html, `<h2 id="tables">Side by side</h2>`)
	assert.Contains(t, html, "<h3>Standard vs Scale (seed 004)</h3>")
	assert.Contains(t, html, `<th>3,000</th><td class="num">124 ms</td>`)
	assert.Contains(t, html, `href="TestLoad_Helpdesk/setups.csv"`)

	bad := tb
	bad.Rows = append(bad.Rows, []string{"500", "40 ms"})
	err = report.WriteTable(filepath.Join(dir, "bad"), bad)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "row 4 has 2 cells, the header 3")
	_, err = os.Stat(filepath.Join(dir, "bad.md"))
	assert.True(t, os.IsNotExist(err))
	assert.False(t, strings.Contains(html, "bad"))
}
