package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	capTol := fl.Float64("capacity", 0.10, "largest relative capacity drop allowed")
	latTol := fl.Float64("latency", 0.25, "largest relative p95/p99 rise allowed")
	errTol := fl.Float64("errors", 0.01, "largest absolute rise of an outcome's rate")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 2 {
		return fmt.Errorf("give two result files: headroom compare BASE.json NEW.json")
	}
	base, err := loadtest.ReadResult(fl.Arg(0))
	if err != nil {
		return err
	}
	cur, err := loadtest.ReadResult(fl.Arg(1))
	if err != nil {
		return err
	}
	c := loadtest.NewBaseline(base, loadtest.Tolerances{Capacity: *capTol, Latency: *latTol, ErrorRate: *errTol}).Compare(cur)
	switch {
	case c.Skipped != "":
		fmt.Fprintf(stdout, "not compared: %s\n", c.Skipped)
	case len(c.Regressions) == 0:
		fmt.Fprintf(stdout, "no regression (%d figures compared; capacity %g → %g)\n", c.Compared, base.Capacity, cur.Capacity)
	default:
		for _, r := range c.Regressions {
			fmt.Fprintln(stdout, r)
		}
		return regressed{len(c.Regressions)}
	}
	return nil
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
	if fl.NArg() != 1 || *out == "" {
		return fmt.Errorf("give -o and one result file: headroom baseline -o GOLDEN.json RESULT.json")
	}
	res, err := loadtest.ReadResult(fl.Arg(0))
	if err != nil {
		return err
	}
	if res.Partial || len(res.Invalid()) > 0 {
		return fmt.Errorf("%s is %s; a baseline needs a complete, valid run", fl.Arg(0), res.Verdict)
	}
	b := loadtest.NewBaseline(res, loadtest.Tolerances{Capacity: *capTol, Latency: *latTol, ErrorRate: *errTol, LatencySlack: *slack})
	if err := b.WriteFile(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "baseline %s: capacity %g, %d steps, class %s\n", *out, b.Capacity, len(b.Steps), b.Environment.Class)
	return nil
}
