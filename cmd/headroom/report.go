package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// reportCmd writes the HTML report of a result beside it, or of every
// result under a directory and the directory's index page.
func reportCmd(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("report", flag.ContinueOnError)
	out := fl.String("o", "", "where to write: the HTML report of a RESULT.json (default <base>.html beside it), or the index of a DIR (default DIR/index.html; its links are relative to DIR)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 1 {
		return fmt.Errorf("give one result file or directory: headroom report testdata/results")
	}
	arg := fl.Arg(0)
	if arg == "" {
		root, err := files.ModuleRoot()
		if err != nil {
			return fmt.Errorf("give a result file or directory: no module root here to find testdata/results under")
		}
		arg = filepath.Join(root, "testdata", "results")
	}
	st, err := os.Stat(arg)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		res, err := result.ReadResult(arg)
		if err != nil {
			return err
		}
		path := report.HTMLPath(arg)
		if *out != "" {
			path = *out
		}
		b, err := report.HTML(res, arg)
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, path)
		return nil
	}
	entries, err := report.FindResults(arg)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(arg, e.Path)
		if err := report.WriteHTML(e.Result, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		fmt.Fprintln(stdout, report.HTMLPath(p))
	}
	b, err := report.IndexHTML(arg)
	if err != nil {
		return err
	}
	path := filepath.Join(arg, report.IndexFile)
	if *out != "" {
		path = *out
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s (%d results)\n", path, len(entries))
	return nil
}
