// Command headroom works with Headroom's result files and runs a plan
// against a running service.
//
//	headroom render  RESULT.json            print the Markdown capacity report
//	headroom compare BASE.json NEW.json     list regressions of NEW against BASE
//	headroom history [DIR|FILE...]          capacity over time, one line per run
//	headroom plot    -o OUT.svg RESULT.json latency and throughput per step as SVG
//	headroom baseline -o GOLDEN.json RESULT.json  a baseline from a result
//	headroom run     -url URL [flags]       drive a step ladder against URL
//
// Results are written by `go test -tags load ./loadtest/...` under
// testdata/results/.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

var commands = map[string]func(args []string, stdout io.Writer) error{
	"render":   render,
	"compare":  compare,
	"history":  history,
	"plot":     plot,
	"baseline": baseline,
	"run":      runCmd,
}

const usage = `usage: headroom <command> [flags] [args]

commands:
  render  RESULT.json             print the Markdown capacity report of a result
  compare BASE.json NEW.json      compare NEW with BASE as a baseline; exit 1 on a regression
  history [DIR|FILE...]           capacity and verdict of every result, oldest first (default testdata/results)
  plot    -o OUT.svg RESULT.json  plot latency percentiles and throughput per step
  baseline -o GOLDEN.json RESULT.json  make a baseline from a result (e.g. promote a nightly run)
  run     -url URL [flags]        drive an open-model step ladder against URL (loopback only unless -allow-remote)

Run 'headroom <command> -h' for a command's flags.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	cmd, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "headroom: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
	if err := cmd(os.Args[2:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		var r regressed
		if errors.As(err, &r) {
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "headroom %s: %v\n", os.Args[1], err)
		os.Exit(2)
	}
}

// regressed is returned by compare when it found regressions (exit 1).
type regressed struct{ n int }

func (r regressed) Error() string { return fmt.Sprintf("%d regression(s)", r.n) }
