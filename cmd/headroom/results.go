package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest"
	caphistory "github.com/headroom-dev/headroom/loadtest/history"
	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/loadtest/result"
)

func render(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	studies := fs.Bool("studies", false, "render the runtime studies page of the study files given, or of every study file under the directories given (default testdata/results)")
	format := fs.String("format", "md", "md: the Markdown capacity report of one result; json: a machine-readable summary (an array with several results or a directory); junit: JUnit XML, a test case per step (of every result under a directory given)")
	out := fs.String("o", "", "with -studies: write the page (README.md) to this directory with a CSV beside each table, instead of printing it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *studies || (fs.NArg() == 1 && isStudyFile(fs.Arg(0))) {
		return renderStudies(fs.Args(), *out, stdout)
	}
	if *out != "" {
		return fmt.Errorf("-o is for -studies (the HTML report's is headroom report -o)")
	}
	switch *format {
	case "md", "markdown":
		if fs.NArg() != 1 {
			return fmt.Errorf("give one result file: headroom render testdata/results/TestLoad_Smoke/users=20.json")
		}
	case "json", "junit":
		if fs.NArg() < 1 {
			return fmt.Errorf("give result files or directories: headroom render -format %s testdata/results", *format)
		}
	default:
		return fmt.Errorf("-format %q: give md, json or junit", *format)
	}
	var results []*loadtest.Result
	for _, p := range fs.Args() {
		if st, err := os.Stat(p); err == nil && st.IsDir() && *format != "md" && *format != "markdown" {
			// Every result under a directory, for CI.
			entries, err := report.FindResults(p)
			if err != nil {
				return err
			}
			for _, e := range entries {
				results = append(results, e.Result)
			}
			continue
		}
		res, err := result.ReadResult(p)
		if err != nil {
			return err
		}
		results = append(results, res)
	}
	switch *format {
	case "json":
		var v any
		if len(results) == 1 {
			v = report.Summarize(results[0])
		} else {
			sums := make([]report.Summary, len(results))
			for i, r := range results {
				sums[i] = report.Summarize(r)
			}
			v = sums
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	case "junit":
		b, err := report.JUnit(results...)
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	_, err := io.WriteString(stdout, results[0].Markdown())
	return err
}

func compare(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("compare", flag.ContinueOnError)
	capTol := fl.Float64("capacity", 0.10, "largest relative capacity drop allowed (when BASE is a result)")
	latTol := fl.Float64("latency", 0.25, "largest relative p95/p99 rise allowed (when BASE is a result)")
	errTol := fl.Float64("errors", 0.01, "largest absolute rise of an outcome's rate (when BASE is a result)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 2 {
		return fmt.Errorf("give two files: headroom compare BASE.json NEW.json (BASE a result or a baseline)")
	}
	cur, err := result.ReadResult(fl.Arg(1))
	if err != nil {
		return err
	}
	base, err := readBase(fl.Arg(0), result.Tolerances{Capacity: *capTol, Latency: *latTol, ErrorRate: *errTol})
	if err != nil {
		return err
	}
	switch {
	case base.Scenario != cur.Scenario:
		return fmt.Errorf("%s is of scenario %q, %s of %q: results of different scenarios do not compare", fl.Arg(0), base.Scenario, fl.Arg(1), cur.Scenario)
	case !reflect.DeepEqual(base.Plan, cur.Plan):
		return fmt.Errorf("%s and %s ran different plans (%s vs %s): they do not compare", fl.Arg(0), fl.Arg(1), describePlan(base.Plan), describePlan(cur.Plan))
	}
	if diff := base.Environment.ClassDiff(cur.Environment); len(diff) > 0 {
		return fmt.Errorf("%s and %s were measured in different environment classes (%s): they do not compare; compare builds on one machine with headroom ab", fl.Arg(0), fl.Arg(1), strings.Join(diff, "; "))
	}
	c := base.Compare(cur)
	c.Path = fl.Arg(0)
	for _, l := range c.Lines() {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintf(stdout, "capacity %g–%g → %g\n", base.Capacity.Min, base.Capacity.Max, cur.Capacity)
	switch {
	case c.Skipped != "":
		return &exitError{exitInvalid, fmt.Errorf("not compared: %s", c.Skipped)}
	case len(c.Regressions) > 0:
		return &exitError{exitFail, fmt.Errorf("%d regression(s)", len(c.Regressions))}
	case len(c.Inconclusive) > 0:
		return &exitError{exitInvalid, fmt.Errorf("inconclusive: the run cannot show it held its baseline (%d reason(s)); rerun", len(c.Inconclusive))}
	}
	return nil
}

// readBase reads path as a baseline, or as a result made into a one-run
// baseline with tol.
func readBase(path string, tol result.Tolerances) (*result.Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Runs *int `json:"runs"`
	}
	if json.Unmarshal(data, &head) == nil && head.Runs != nil {
		return result.ReadBaseline(path)
	}
	res, err := result.ReadResult(path)
	if err != nil {
		return nil, err
	}
	return result.NewBaseline(tol, res)
}

func describePlan(p result.PlanInfo) string {
	if p.Type == "ladder" {
		var levels []string
		for _, s := range p.Steps {
			levels = append(levels, fmt.Sprintf("%g", s.Level))
		}
		return "ladder " + strings.Join(levels, ",")
	}
	return p.Type
}

// historyUsage is the history command's help.
const historyUsage = `usage:
  headroom history [DIR|FILE...]
      list every result under DIR (default testdata/results), oldest first
  headroom history add [-note "what changed"] [-new-baseline] [-file FILE] RESULT.json...
      append one row per result to the capacity history (default testdata/history.jsonl)
  headroom history show [-scenario NAME] [-format md|text] [-file FILE]
      render the capacity history, newest first
`

// history lists results (headroom history [DIR|FILE...]), or keeps the
// capacity history: headroom history add, headroom history show.
func history(args []string, stdout io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "add":
			return historyAdd(args[1:], stdout)
		case "show":
			return historyShow(args[1:], stdout)
		case "changes":
			return historyChanges(args[1:], stdout)
		}
	}
	return historyList(args, stdout)
}

// historyFile returns the -file flag's value, else the module's history
// file.
func historyFile(file string) string {
	if file != "" {
		return file
	}
	return caphistory.DefaultPath()
}

const historyFileFlag = "history file (default " + caphistory.DefaultFile + " under the module root)"

// historyAdd appends a row per result to the history file: every result is
// read and checked first, so that a refused one adds nothing.
func historyAdd(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("history add", flag.ContinueOnError)
	note := fl.String("note", "", `what changed since the previous row, e.g. "Database pools keep idle connections" (default: the commit's subject)`)
	newBaseline := fl.Bool("new-baseline", false, "mark the rows as a new baseline, not comparable with earlier rows (a change no knob records, such as a rebuilt workload model)")
	file := fl.String("file", "", historyFileFlag)
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() == 0 {
		return fmt.Errorf("give one or more result files: headroom history add -note \"what changed\" testdata/results/TestLoad_Smoke/backend=docker/db=postgres.json")
	}
	path := historyFile(*file)
	root, rootErr := files.ModuleRoot()
	var rows []caphistory.Row
	for _, p := range fl.Args() {
		res, err := result.ReadResult(p)
		if err != nil {
			return err
		}
		row := caphistory.RowFromResult(res, *note)
		if err := row.Validate(); err != nil {
			again := ""
			if res.Provenance.Command != "" {
				again = " (" + res.Provenance.Command + ")"
			}
			return fmt.Errorf("%s: %w%s; nothing was added", p, err, again)
		}
		row.NewBaseline = *newBaseline
		if rootErr == nil {
			row.Subject = caphistory.CommitSubject(root, row.Commit)
		}
		row.Result = resultPath(root, p)
		rows = append(rows, row)
	}
	// Append refuses a run the history holds, under its lock: two adds of
	// one result at once add it once.
	if err := caphistory.Append(path, rows...); err != nil {
		return err
	}
	for _, r := range rows {
		unit := r.Unit
		if unit != "" {
			unit = " " + unit
		}
		bound := ""
		if r.LowerBound {
			bound = "at least "
		}
		fmt.Fprintf(stdout, "added to %s: %s, %s, %s%g%s (%s)\n", path, r.Scenario, r.Date.Format("2006-01-02 15:04"), bound, r.Capacity, unit, r.Verdict)
	}
	return nil
}

// resultPath is p relative to the module root when under it.
func resultPath(root, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil || root == "" {
		return filepath.ToSlash(p)
	}
	if rel, err := filepath.Rel(root, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(abs)
}

// historyShow renders the history file as a table, newest first.
func historyShow(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("history show", flag.ContinueOnError)
	scenario := fl.String("scenario", "", "only this scenario and its subtests, e.g. TestLoad_Smoke (default every scenario)")
	format := fl.String("format", "md", "md (a Markdown table, as in a report) or text")
	file := fl.String("file", "", historyFileFlag)
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: headroom history show [-scenario NAME] [-format md|text] [-file FILE]", fl.Args())
	}
	render := caphistory.Markdown
	switch *format {
	case "md", "markdown":
	case "text":
		render = caphistory.Text
	default:
		return fmt.Errorf("-format %q: give md or text", *format)
	}
	path := historyFile(*file)
	rows, err := caphistory.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no history at %s: add results with headroom history add RESULT.json", path)
	}
	if err != nil {
		return err
	}
	out := render(rows, *scenario)
	if out == "" {
		var names []string
		for _, r := range rows {
			if !slices.Contains(names, r.Scenario) {
				names = append(names, r.Scenario)
			}
		}
		if len(names) == 0 {
			return fmt.Errorf("%s holds no rows: add results with headroom history add RESULT.json", path)
		}
		sort.Strings(names)
		return fmt.Errorf("no row of scenario %q in %s; it holds %s", *scenario, path, strings.Join(names, ", "))
	}
	_, err = io.WriteString(stdout, out)
	return err
}

// historyList lists the results found under directories (or given as
// files), oldest first.
func historyList(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("history", flag.ContinueOnError)
	fl.Usage = func() { fmt.Fprint(fl.Output(), historyUsage) }
	if err := fl.Parse(args); err != nil {
		return err
	}
	roots := fl.Args()
	if len(roots) == 0 {
		root, err := files.ModuleRoot()
		if err != nil {
			return fmt.Errorf("give result files or directories")
		}
		roots = []string{filepath.Join(root, "testdata", "results")}
	}
	var results []*loadtest.Result
	for _, r := range roots {
		err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
				return err
			}
			res, err := result.ReadResult(path)
			if err != nil {
				fmt.Fprintf(os.Stderr, "skipping %s: %v\n", path, err)
				return nil
			}
			results = append(results, res)
			return nil
		})
		if err != nil {
			return err
		}
	}
	sort.Slice(results, func(i, j int) bool { return results[i].Start.Before(results[j].Start) })
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "START\tSCENARIO\tCOMMIT\tCAPACITY\tVERDICT\tCLASS")
	for _, r := range results {
		commit := r.Provenance.Commit
		if len(commit) > 10 {
			commit = commit[:10]
		}
		if r.Provenance.Dirty {
			commit += "+"
		}
		capacity := strconv.FormatFloat(r.Capacity, 'g', -1, 64)
		if r.CapacityLowerBound {
			capacity = "≥ " + capacity // nothing gave out
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Start.UTC().Format("2006-01-02 15:04"), r.Scenario, commit, capacity, r.Verdict, r.Environment.Class)
	}
	return tw.Flush()
}

func baseline(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("baseline", flag.ContinueOnError)
	out := fl.String("o", "", "baseline file to write, e.g. testdata/baselines/TestLoad_Smoke/backend=docker/db=postgres.json (required)")
	capTol := fl.Float64("capacity", 0.10, "largest relative capacity drop allowed")
	latTol := fl.Float64("latency", 0.25, "largest relative p95/p99 rise allowed")
	errTol := fl.Float64("errors", 0.01, "largest absolute rise of an outcome's rate")
	slack := fl.Duration("slack", 5*time.Millisecond, "absolute latency rise always allowed")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() < 1 || *out == "" {
		return fmt.Errorf("give -o and one or more result files of one scenario: headroom baseline -o BASELINE.json RUN1.json RUN2.json RUN3.json")
	}
	var runs []*loadtest.Result
	for _, p := range fl.Args() {
		res, err := result.ReadResult(p)
		if err != nil {
			return err
		}
		if len(res.Invalid()) > 0 {
			return fmt.Errorf("%s has invalid steps; a baseline needs valid runs", p)
		}
		runs = append(runs, res)
	}
	b, err := result.NewBaseline(result.Tolerances{Capacity: *capTol, Latency: *latTol, ErrorRate: *errTol, LatencySlack: *slack}, runs...)
	if err != nil {
		return err
	}
	if err := b.WriteFile(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "baseline %s: %d run(s), capacity %g–%g, %d steps, class %s\n", *out, b.Runs, b.Capacity.Min, b.Capacity.Max, len(b.Steps), b.Environment.Class)
	return nil
}
