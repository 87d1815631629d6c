// Package study keeps runtime studies: a few cells of one scenario, each
// one configuration of the target measured at one offered load and read
// against its baseline cell on the same host (the forward path under two
// runtime models, the tax of a feature's postures, a shutdown drain's
// policies). A study is written as JSON and as a Markdown page in the form
// of a reference-results page: a lab-profile table, then one table per
// question, each row a cell with its baseline cell marked. Absolute rates
// are not portable across hosts; the ratios between cells are the finding.
package study

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// SchemaVersion is the version of the study file format.
const SchemaVersion = 1

// Study is one scenario's cells, grouped into tables.
type Study struct {
	// Schema is SchemaVersion at the time of writing.
	Schema int `json:"schema"`
	// Name identifies the study: the test's name ("TestLoad_Forward").
	Name string `json:"name"`
	// Title heads its section of the page: "Forward path: sync vs async".
	Title string `json:"title"`
	// Reading says, in a paragraph, how to read the tables.
	Reading string `json:"reading,omitempty"`
	// Command repeats the run.
	Command string `json:"command,omitempty"`
	// Short marks a study of -short sizes.
	Short bool `json:"short,omitempty"`
	// Generated is when the study was written.
	Generated time.Time `json:"generated"`
	// Lab is the lab the cells were measured in.
	Lab Lab `json:"profile"`
	// Tables hold the cells, one table per question.
	Tables []*Table `json:"tables"`
	// Problems lists every check of the study that failed; empty when the
	// study's reading held.
	Problems []string `json:"problems,omitempty"`
}

// Table is one question of a study: a few cells with the same columns.
type Table struct {
	// Title says what the table compares: "Achieved rate — sync vs async
	// (upstream slow)".
	Title string `json:"title"`
	// Columns are the table's columns after the cell's name.
	Columns []Column `json:"columns"`
	// Rows are the cells, in the order they were measured.
	Rows []Row `json:"rows"`
}

// Column is one column of a table: a row's Labels[Key] when it has one,
// else its Figures[Key] printed with Digits decimals.
type Column struct {
	Key    string `json:"key"`
	Title  string `json:"title"`
	Digits int    `json:"digits"`
}

// Row is one cell of a table.
type Row struct {
	// Cell names the cell: "upstream=slow/mode=sync".
	Cell string `json:"cell"`
	// Baseline is the name of the cell this one is read against; empty
	// when the row is itself a baseline.
	Baseline string `json:"baseline,omitempty"`
	// Labels are the row's text columns (runtime, workers, verdict).
	Labels map[string]string `json:"labels,omitempty"`
	// Figures are the row's numbers, keyed by column.
	Figures map[string]float64 `json:"figures,omitempty"`
}

// Lab is the lab a study was measured in, from a cell's result.
type Lab struct {
	Host    string `json:"host,omitempty"`
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	OS      string `json:"os"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	Backend string `json:"backend,omitempty"`
	Engine  string `json:"engine,omitempty"`
	// Target is the system under test and its version ("relay 0.1.0 (sha…)").
	Target string `json:"target,omitempty"`
	// Components lists the others with their versions.
	Components []string `json:"components,omitempty"`
	// Limits are the target's CPU and memory limits, as text.
	Limits string `json:"limits,omitempty"`
	// Generator describes the load generator.
	Generator string `json:"generator"`
	// Commit is the code's commit ("+dirty" when uncommitted changes).
	Commit string `json:"commit,omitempty"`
}

// Generator is the Lab.Generator of a study driven by loadtest's open
// model in the test process.
const Generator = "headroom loadtest.Arrivals (open model, in the test process, loopback)"

// LabOf returns the lab a result was measured in.
func LabOf(res *loadtest.Result) Lab {
	e := res.Environment
	p := Lab{Host: e.Host, CPU: e.CPUModel, Cores: e.Cores, OS: e.OS, Kernel: e.Kernel, Go: e.Go,
		Backend: e.System.Backend, Engine: e.System.Engine, Generator: Generator, Commit: res.Provenance.Commit}
	if res.Provenance.Dirty && p.Commit != "" {
		p.Commit += "+dirty"
	}
	for _, c := range e.System.Components {
		v := c.Name
		if c.Version != "" {
			v += " " + c.Version
		}
		if c.Role == result.RoleTarget && p.Target == "" {
			p.Target = v
			continue
		}
		p.Components = append(p.Components, v)
	}
	var lim []string
	if e.System.CPUs > 0 {
		lim = append(lim, fmt.Sprintf("%g CPU", e.System.CPUs))
	}
	if e.System.Memory > 0 {
		lim = append(lim, fmt.Sprintf("%d MiB", e.System.Memory>>20))
	}
	p.Limits = strings.Join(lim, " / ")
	return p
}

// Table returns the study's table with title, adding it with columns when
// there is none yet.
func (s *Study) Table(title string, columns ...Column) *Table {
	for _, t := range s.Tables {
		if t.Title == title {
			return t
		}
	}
	t := &Table{Title: title, Columns: columns}
	s.Tables = append(s.Tables, t)
	return t
}

// Add appends a row.
func (t *Table) Add(r Row) { t.Rows = append(t.Rows, r) }

// Err joins the study's problems; nil when its reading held.
func (s *Study) Err() error {
	if len(s.Problems) == 0 {
		return nil
	}
	errs := make([]error, len(s.Problems))
	for i, p := range s.Problems {
		errs[i] = errors.New(p)
	}
	return errors.Join(errs...)
}

// Path returns where the study of the test named name is written:
// study[.short].json in the test's results folder, beside its result.
func Path(name string) (string, error) {
	res, _, err := files.ResultPaths(name + "/study")
	return res, err
}

// Write writes the study as JSON at path and its page beside it (.md).
func (s *Study) Write(path string) error {
	s.Schema = SchemaVersion
	if s.Generated.IsZero() {
		s.Generated = time.Now().UTC()
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(strings.TrimSuffix(path, ".json")+".md", []byte(Page(s)), 0o644)
}

// Read reads a study file.
func Read(path string) (*Study, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Study
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("study %s: %w", path, err)
	}
	if s.Schema == 0 || len(s.Tables) == 0 && s.Name == "" {
		return nil, fmt.Errorf("study %s: not a study file (no schema or name)", path)
	}
	return &s, nil
}
