package study

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// CSV renders the table for charting elsewhere: a header of "Cell",
// "Read against" and the columns' titles, then a row per cell, each
// figure at full precision (the page rounds them) and "" where a cell has
// none.
func (t *Table) CSV() ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	header := []string{"Cell", "Read against"}
	for _, c := range t.Columns {
		header = append(header, c.Title)
	}
	if err := w.Write(header); err != nil {
		return nil, err
	}
	for _, r := range t.Rows {
		row := []string{r.Cell, r.Baseline}
		for _, c := range t.Columns {
			v := ""
			if l, ok := r.Labels[c.Key]; ok {
				v = l
			} else if f, ok := r.Figures[c.Key]; ok {
				v = strconv.FormatFloat(f, 'g', -1, 64)
			}
			row = append(row, v)
		}
		if err := w.Write(row); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// PageFile is the name of the page WritePage writes.
const PageFile = "README.md"

// CSVName is the file WritePage writes a study's i-th table to:
// "TestLoad_Forward-1.csv" (".short-1.csv" for -short sizes).
func CSVName(s *Study, i int) string {
	name := s.Name
	if s.Short {
		name += ".short"
	}
	return fmt.Sprintf("%s-%d.csv", name, i+1)
}

// WritePage writes the studies' page to dir (PageFile) with a CSV beside
// each table (CSVName), linked under it: a reference-results page to
// commit, rendered from the study files it is made of.
func WritePage(dir string, studies ...*Study) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range studies {
		for i, t := range s.Tables {
			b, err := t.CSV()
			if err != nil {
				return fmt.Errorf("study %s, table %q: %w", s.Name, t.Title, err)
			}
			if err := os.WriteFile(filepath.Join(dir, CSVName(s, i)), b, 0o644); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(dir, PageFile), []byte(page(studies, CSVName)), 0o644)
}
