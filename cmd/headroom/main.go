// Command headroom works with Headroom's result files and runs a plan
// against a running service.
//
//	headroom render  RESULT.json            print the Markdown capacity report
//	headroom render  -format json|junit RESULT.json...  a summary for CI: JSON, or JUnit XML
//	headroom render  -studies [DIR|FILE...] print the runtime-studies page of a run's studies
//	headroom compare BASE.json NEW.json     list regressions of NEW against BASE
//	headroom history [DIR|FILE...]          capacity over time, one line per run
//	headroom history add [-note TEXT] RESULT.json...  append rows to the capacity history
//	headroom history show [-scenario NAME]  the capacity history as a report's table
//	headroom report  [RESULT.json|DIR]      the HTML report of a result, or of every result under DIR and its index.html
//	headroom plot    [-what W] -o OUT.svg RESULT.json  a result's plots as SVG or PNG
//	headroom baseline -o GOLDEN.json RESULT.json...  a baseline from results
//	headroom run     -url URL [flags]       drive a step ladder against URL
//	headroom ab      -run TEST [flags]      compare two builds by interleaved trials
//
// Exit status: 0 pass, 1 breach or regression, 2 usage (or a target that
// does not answer), 3 invalid or inconclusive.
//
// Results are written by `go test -tags load ./loadtest/...` under
// testdata/results/; the capacity history that headroom history add keeps
// is testdata/history.jsonl.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/headroom-dev/headroom/loadtest"
)

var commands = map[string]func(args []string, stdout io.Writer) error{
	"render":   render,
	"compare":  compare,
	"history":  history,
	"plot":     plot,
	"report":   reportCmd,
	"baseline": baseline,
	"run":      runCmd,
	"ab":       abCmd,
}

const usage = `usage: headroom <command> [flags] [args]

commands:
  render  RESULT.json             print the Markdown capacity report of a result
  render  -format json|junit RESULT.json|DIR...
                                  a summary for CI: JSON (scenario, verdict, capacity, first failure, each step's
                                  level, verdict, rates and primary-kind latency, violations, invalid reasons;
                                  an array with several results or a DIR), or JUnit XML (a suite per result, a case
                                  per step) of the results given or found under each DIR
  render  -studies [DIR|FILE...]  print the runtime-studies page of study files (study.json), or of every one
                                  under DIR (default testdata/results); exit 1 when a study's reading failed
  compare BASE.json NEW.json      compare NEW with BASE (a result or a baseline); exit 1 on a regression
  history [DIR|FILE...]           capacity and verdict of every result, oldest first (default testdata/results)
  history add [-note TEXT] [-new-baseline] [-file FILE] RESULT.json...
                                  append a row per finished result to the capacity history (default
                                  testdata/history.jsonl); refuses incomplete results and runs already in it
  history show [-scenario NAME] [-format md|text] [-file FILE]
                                  the capacity history as a report's table, newest first, with the change
                                  against the previous comparable row and what changed
  report  [-o OUT] [RESULT.json|DIR]
                                  write a result's HTML report beside it (<base>.html: verdict, command, capacity
                                  table, plots, checks, environment, links to logs and profiles; self-contained);
                                  for a DIR, the report of every result under it and DIR/index.html over them all
                                  (by scenario, with the capacity history and A/B comparisons found there);
                                  DIR defaults to testdata/results
  plot    [-what W] [-kind K] [-format svg|png] [-o OUT] RESULT.json
                                  draw a result's plots: W is latency (default; p50/p95/p99 of the primary kind by
                                  level, SLO and capacity marked), throughput, knee, timeline, resources, delays or
                                  all; several figures go to OUT-<figure>.<ext>
  baseline -o GOLDEN.json RESULT.json...  make a baseline from one or more results of one scenario (their spread is kept)
  run     -url URL [flags]        drive an open-model step ladder against URL (loopback only unless -allow-remote)
  ab      -run TEST [flags]       compare two builds with interleaved trials: same, different or inconclusive (-bisect for git bisect run)
  help                            print this help

exit status:
  0  pass: the SLOs held, no regression
  1  an SLO breach, nothing succeeded, or a regression
  2  usage: bad flags or arguments, an unreadable or mismatched file, a target that does not answer
  3  invalid, incomplete or inconclusive: the generator was the bottleneck, a check had too little data,
     the run was interrupted, an A/B comparison could not decide
  (ab -bisect: 0 good, 1 bad, 125 skip, 128 abort, as git bisect run expects)

Run 'headroom <command> -h' for a command's flags.
`

// Exit statuses.
const (
	exitPass    = 0
	exitFail    = 1
	exitUsage   = 2
	exitInvalid = 3
)

// exitError carries a command's exit status; its message, if any, is
// printed on stderr.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// verdictError maps a result's verdict to an exit status: 1 for a breach or
// a regression, 3 for an invalid or incomplete run, nil for a pass.
func verdictError(res *loadtest.Result) error {
	err := res.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, loadtest.ErrBreach) || errors.Is(err, loadtest.ErrRegression):
		return &exitError{exitFail, err}
	default:
		return &exitError{exitInvalid, err}
	}
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command in args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitPass
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "headroom: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	err := cmd(args[1:], stdout)
	var ee *exitError
	switch {
	case err == nil:
		return exitPass
	case errors.Is(err, flag.ErrHelp):
		return exitPass
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintf(stderr, "headroom %s: %v\n", args[0], ee.err)
		}
		return ee.code
	default:
		fmt.Fprintf(stderr, "headroom %s: %v\n", args[0], err)
		return exitUsage
	}
}
