package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

func render(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("give one result file: headroom render testdata/results/TestLoad_Smoke/users=20.json")
	}
	res, err := loadtest.ReadResult(fs.Arg(0))
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, res.Markdown())
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
	cur, err := loadtest.ReadResult(fl.Arg(1))
	if err != nil {
		return err
	}
	base, err := readBase(fl.Arg(0), loadtest.Tolerances{Capacity: *capTol, Latency: *latTol, ErrorRate: *errTol})
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
	for _, n := range c.NotCompared {
		fmt.Fprintf(stdout, "not compared: %s\n", n)
	}
	switch {
	case c.Skipped != "":
		return &exitError{exitInvalid, fmt.Errorf("not compared: %s", c.Skipped)}
	case len(c.Regressions) == 0:
		fmt.Fprintf(stdout, "no regression (%d figures compared; capacity %g–%g → %g)\n", c.Compared, base.Capacity.Min, base.Capacity.Max, cur.Capacity)
		return nil
	default:
		for _, r := range c.Regressions {
			fmt.Fprintln(stdout, r)
		}
		return &exitError{exitFail, fmt.Errorf("%d regression(s)", len(c.Regressions))}
	}
}

// readBase reads path as a baseline, or as a result made into a one-run
// baseline with tol.
func readBase(path string, tol loadtest.Tolerances) (*loadtest.Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var head struct {
		Runs *int `json:"runs"`
	}
	if json.Unmarshal(data, &head) == nil && head.Runs != nil {
		return loadtest.ReadBaseline(path)
	}
	res, err := loadtest.ReadResult(path)
	if err != nil {
		return nil, err
	}
	return loadtest.NewBaseline(tol, res)
}

func describePlan(p loadtest.PlanInfo) string {
	if p.Kind == "ladder" {
		var levels []string
		for _, s := range p.Steps {
			levels = append(levels, fmt.Sprintf("%g", s.Level))
		}
		return "ladder " + strings.Join(levels, ",")
	}
	return p.Kind
}

func history(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("history", flag.ContinueOnError)
	if err := fl.Parse(args); err != nil {
		return err
	}
	roots := fl.Args()
	if len(roots) == 0 {
		root, err := loadtest.ModuleRoot()
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
			res, err := loadtest.ReadResult(path)
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%g\t%s\t%s\n", r.Start.UTC().Format("2006-01-02 15:04"), r.Scenario, commit, r.Capacity, r.Verdict, r.Environment.Class)
	}
	return tw.Flush()
}

func baseline(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("baseline", flag.ContinueOnError)
	out := fl.String("o", "", "baseline file to write, e.g. testdata/golden/TestLoad_Smoke/backend=docker/db=postgres.json (required)")
	capTol := fl.Float64("capacity", 0.10, "largest relative capacity drop allowed")
	latTol := fl.Float64("latency", 0.25, "largest relative p95/p99 rise allowed")
	errTol := fl.Float64("errors", 0.01, "largest absolute rise of an outcome's rate")
	slack := fl.Duration("slack", 5*time.Millisecond, "absolute latency rise always allowed")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() < 1 || *out == "" {
		return fmt.Errorf("give -o and one or more result files of one scenario: headroom baseline -o GOLDEN.json RUN1.json RUN2.json RUN3.json")
	}
	var runs []*loadtest.Result
	for _, p := range fl.Args() {
		res, err := loadtest.ReadResult(p)
		if err != nil {
			return err
		}
		if len(res.Invalid()) > 0 {
			return fmt.Errorf("%s has invalid steps; a baseline needs valid runs", p)
		}
		runs = append(runs, res)
	}
	b, err := loadtest.NewBaseline(loadtest.Tolerances{Capacity: *capTol, Latency: *latTol, ErrorRate: *errTol, LatencySlack: *slack}, runs...)
	if err != nil {
		return err
	}
	if err := b.WriteFile(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "baseline %s: %d run(s), capacity %g–%g, %d steps, class %s\n", *out, b.Runs, b.Capacity.Min, b.Capacity.Max, len(b.Steps), b.Environment.Class)
	return nil
}
