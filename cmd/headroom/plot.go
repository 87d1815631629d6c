package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// plot draws a result's figures (see report.Plots): by default the
// latency of its primary request kind against the load level.
func plot(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("plot", flag.ContinueOnError)
	out := fl.String("o", "", "file to write (default stdout); with several figures, each goes to OUT with -<figure> before its extension")
	kind := fl.String("kind", "", "request kind of the latency figures (default the primary kind: the busiest request kind, never an observed one)")
	format := fl.String("format", "", "svg or png (default from -o's extension, else svg)")
	what := fl.String("what", "latency", "what to plot: "+strings.Join(report.What, ", "))
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		return fmt.Errorf("give one result file: headroom plot [-what latency] [-o out.svg] RESULT.json")
	}
	f := *format
	if f == "" {
		f = "svg"
		if strings.EqualFold(filepath.Ext(*out), ".png") {
			f = "png"
		}
	}
	if f != "svg" && f != "png" {
		return fmt.Errorf("-format %q: give svg or png", f)
	}
	res, err := result.ReadResult(fl.Arg(0))
	if err != nil {
		return err
	}
	figs, err := report.Plots(res, *what, *kind)
	if err != nil {
		return err
	}
	if len(figs) > 1 && *out == "" {
		var names []string
		for _, fig := range figs {
			names = append(names, fig.Name)
		}
		return fmt.Errorf("-what %s draws %d figures (%s): give -o to write them to files", *what, len(figs), strings.Join(names, ", "))
	}
	for _, fig := range figs {
		b, err := fig.Render(f)
		if err != nil {
			return err
		}
		if *out == "" {
			_, err = stdout.Write(b)
			return err
		}
		path := *out
		if len(figs) > 1 {
			ext := filepath.Ext(path)
			path = strings.TrimSuffix(path, ext) + "-" + fig.Name + ext
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintln(stdout, path)
	}
	return nil
}
