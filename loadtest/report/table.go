package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/headroom-dev/headroom/internal/files"
)

// Table is a comparison the seeds print side by side — protocol eras,
// live against poll, Standard against Scale: a column per variant, a row
// per figure (or per level). A scenario that runs its variants as
// subtests gathers their results into one and writes it beside them
// (WriteTable); the index shows every table below its directory.
type Table struct {
	// Title names the comparison: "Standard vs Scale (seed 004)".
	Title string `json:"title"`
	// Header is the first row: the row label's heading, then a column per
	// variant.
	Header []string `json:"header"`
	// Rows are the figures, each as long as Header.
	Rows [][]string `json:"rows"`
	// Note says what to read it against: where and when it was measured.
	Note string `json:"note,omitempty"`
}

// TableSuffix ends the name of a table's JSON file; the Markdown and the
// CSV beside it share its stem.
const TableSuffix = ".table.json"

// Validate reports a table whose rows do not match its header.
func (t Table) Validate() error {
	if t.Title == "" || len(t.Header) < 2 {
		return errors.New("report: a table needs a title and a header of a label and at least one column")
	}
	for i, r := range t.Rows {
		if len(r) != len(t.Header) {
			return fmt.Errorf("report: table %q: row %d has %d cells, the header %d", t.Title, i+1, len(r), len(t.Header))
		}
	}
	return nil
}

// Markdown renders the table with its title and note.
func (t Table) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", t.Title)
	esc := func(cells []string) string {
		out := make([]string, len(cells))
		for i, c := range cells {
			out[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		return "| " + strings.Join(out, " | ") + " |\n"
	}
	b.WriteString(esc(t.Header))
	b.WriteString("| - |" + strings.Repeat(" -: |", len(t.Header)-1) + "\n")
	for _, r := range t.Rows {
		b.WriteString(esc(r))
	}
	if t.Note != "" {
		fmt.Fprintf(&b, "\n%s\n", t.Note)
	}
	return b.String()
}

// CSV renders the header and the rows, for charting elsewhere.
func (t Table) CSV() ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(t.Header); err != nil {
		return nil, err
	}
	if err := w.WriteAll(t.Rows); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTable writes t as stem.md, stem.csv and stem.table.json (what the
// index reads), each atomically.
func WriteTable(stem string, t Table) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(stem), 0o755); err != nil {
		return err
	}
	c, err := t.CSV()
	if err != nil {
		return err
	}
	j, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return errors.Join(files.WriteAtomic(stem+".md", []byte(t.Markdown())),
		files.WriteAtomic(stem+".csv", c), files.WriteAtomic(stem+TableSuffix, j))
}

// ReadTable reads a table WriteTable wrote (its .table.json).
func ReadTable(path string) (Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Table{}, err
	}
	var t Table
	if err := json.Unmarshal(b, &t); err != nil {
		return Table{}, fmt.Errorf("report: %s: %w", path, err)
	}
	return t, t.Validate()
}
