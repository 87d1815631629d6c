package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/internal/files"
	caphistory "github.com/headroom-dev/headroom/loadtest/history"
	"github.com/headroom-dev/headroom/loadtest/result"
)

const changesUsage = `usage: headroom history changes [-scenario NAME] [-format md|text|json] [-file FILE] [-worse]

Searches every figure of each scenario's history — capacity, throughput,
failures, p50/p95/p99 per request kind, CPU per success and memory per
component — for steps (E-divisive means with a permutation test, see
package loadtest/changepoint) and for slow drifts (Mann-Kendall with a
Theil–Sen slope), over each stretch of comparable rows. A step reads "p95
dashboard stepped ×1.40 between the nights of commits a and b"; a drift
"cpu/ok relay drifts +3.0%/night over the nights of commits a…b".
Exit status 1 when a change for the worse is found (with -worse, only those
are listed).

`

// historyChanges prints the changes found in the history's series.
func historyChanges(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("history changes", flag.ContinueOnError)
	fl.Usage = func() { fmt.Fprint(fl.Output(), changesUsage); fl.PrintDefaults() }
	scenario := fl.String("scenario", "", "only this scenario and its subtests (default every scenario)")
	format := fl.String("format", "md", "md (a Markdown list), text, or json")
	file := fl.String("file", "", historyFileFlag)
	worseOnly := fl.Bool("worse", false, "list only the changes for the worse")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: headroom history changes [-scenario NAME] [-format md|text|json] [-file FILE]", fl.Args())
	}
	if !slices.Contains([]string{"md", "markdown", "text", "json"}, *format) {
		return fmt.Errorf("-format %q: give md, text or json", *format)
	}
	rows, err := readHistory(historyFile(*file))
	if err != nil {
		return err
	}
	found, err := caphistory.Changes(rows, *scenario, caphistory.ChangeOptions{})
	if err != nil {
		return err
	}
	if *worseOnly {
		found = worse(found)
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(findingsJSON(found)); err != nil {
			return err
		}
	case "text":
		for _, f := range found {
			fmt.Fprintln(stdout, f)
		}
	default:
		fmt.Fprint(stdout, caphistory.FindingsMarkdown(found))
	}
	if len(found) == 0 && *format != "json" {
		fmt.Fprintln(stdout, "no change found")
	}
	if n := len(worse(found)); n > 0 {
		return &exitError{code: exitFail}
	}
	return nil
}

func readHistory(path string) ([]caphistory.Row, error) {
	rows, err := caphistory.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no history at %s: add results with headroom history add RESULT.json, or headroom nightly", path)
	}
	return rows, err
}

// worse returns the system's changes for the worse: a change in the
// harness's own cost (Finding.Harness) is the machine's as much as the
// build's, told but neither counted nor bisected.
func worse(fs []caphistory.Finding) []caphistory.Finding {
	var out []caphistory.Finding
	for _, f := range fs {
		if f.Worse && !f.Harness {
			out = append(out, f)
		}
	}
	return out
}

// findingJSON is a finding as headroom history changes -format json and
// the bisection ledger write it.
type findingJSON struct {
	Scenario   string  `json:"scenario"`
	Figure     string  `json:"figure"`
	Unit       string  `json:"unit,omitempty"`
	Kind       string  `json:"kind"` // step or trend
	Worse      bool    `json:"worse"`
	Harness    bool    `json:"harness,omitempty"` // a cost of the harness: told, not counted
	Before     string  `json:"before"`            // commit of the last night before (a step) or the first night (a trend)
	After      string  `json:"after"`
	BeforeDate string  `json:"before_date"`
	AfterDate  string  `json:"after_date"`
	Ratio      float64 `json:"ratio"`
	PerNight   float64 `json:"per_night,omitempty"`
	Nights     int     `json:"nights"`
	P          float64 `json:"p"`
	Text       string  `json:"text"`
}

func findingsJSON(fs []caphistory.Finding) []findingJSON {
	out := []findingJSON{}
	for _, f := range fs {
		kind := "trend"
		if f.Step {
			kind = "step"
		}
		out = append(out, findingJSON{
			Scenario: f.Scenario, Figure: f.Figure, Unit: f.Unit, Kind: kind, Worse: f.Worse, Harness: f.Harness,
			Before: f.Before.Commit, After: f.After.Commit,
			BeforeDate: f.Before.Date.UTC().Format(time.RFC3339), AfterDate: f.After.Date.UTC().Format(time.RFC3339),
			Ratio: f.Ratio, PerNight: f.PerNight, Nights: f.Nights, P: f.P, Text: f.String(),
		})
	}
	return out
}

const nightlyUsage = `usage: headroom nightly [-results DIR] [-file HISTORY] [-summary FILE] [-bisect] [-ledger FILE] [-ab "FLAGS"]

One night of the nightly pipeline, the same in GitHub Actions and in make
nightly's rehearsal: every finished result under -results is appended to
the history (a run it holds already is skipped; an interrupted one is
named and left out, so that it never stands for a pass), the history is
searched for changes (headroom history changes), and the findings are
written to -summary. With -bisect, each step for the worse not yet in
-ledger is taken up as headroom bisect-change does: an A/B of the two
nights' commits first (a step it does not reproduce was the machine's and
is not bisected), then git bisect between them, and the culprit, with the
A/B table at it, written to the summary. Steps of the harness's own costs
are told, not bisected. Exit status 1 when a change for the worse is
found.

`

func nightlyCmd(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("nightly", flag.ContinueOnError)
	fl.Usage = func() { fmt.Fprint(fl.Output(), nightlyUsage); fl.PrintDefaults() }
	results := fl.String("results", "testdata/results", "the night's results: every result file under it (A/B trials under ab/ are left out)")
	file := fl.String("file", "", historyFileFlag)
	summary := fl.String("summary", "", "append the night's Markdown summary to this file too (e.g. $GITHUB_STEP_SUMMARY)")
	bisect := fl.Bool("bisect", false, "bisect each new step for the worse between its two nights' commits (runs A/B trials: minutes)")
	ledger := fl.String("ledger", "", "the bisections done so far, one JSON line each (default bisected.jsonl beside the history)")
	abFlags := fl.String("ab", "", `flags for every headroom ab the bisection runs, e.g. "-short -trials 5" or "-pkg ./loadtest -tags ''"`)
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %s", fl.Args(), strings.SplitN(nightlyUsage, "\n", 2)[0])
	}
	path := historyFile(*file)
	var md strings.Builder
	added, skipped, err := addResults(*results, path)
	if err != nil {
		return err
	}
	fmt.Fprintf(&md, "## Nightly history\n\n%d result(s) added to `%s`.\n", added, path)
	for _, s := range skipped {
		fmt.Fprintf(&md, "- not added: %s\n", s)
	}
	rows, err := readHistory(path)
	if err != nil {
		return err
	}
	found, err := caphistory.Changes(rows, "", caphistory.ChangeOptions{})
	if err != nil {
		return err
	}
	md.WriteString("\n### Changes over the nights\n\n")
	if len(found) == 0 {
		md.WriteString("No step or drift found in any figure.\n")
	} else {
		md.WriteString(caphistory.FindingsMarkdown(found))
	}
	if *bisect {
		led := *ledger
		if led == "" {
			led = filepath.Join(filepath.Dir(path), "bisected.jsonl")
		}
		for _, group := range stepGroups(worse(found)) {
			done, err := inLedger(led, group[0])
			if err != nil {
				return err
			}
			if done {
				fmt.Fprintf(&md, "\nAlready bisected: %s\n", group[0])
				continue
			}
			out, err := bisectChange(context.Background(), group, strings.Fields(*abFlags), stdout)
			md.WriteString("\n" + out)
			if err != nil {
				fmt.Fprintf(&md, "\nThe bisection did not finish: %v\n", err)
				continue
			}
			if err := appendLedger(led, group[0], out); err != nil {
				return err
			}
		}
	}
	fmt.Fprint(stdout, md.String())
	if *summary != "" {
		if err := appendFile(*summary, md.String()); err != nil {
			return err
		}
	}
	if n := len(worse(found)); n > 0 {
		return &exitError{code: exitFail}
	}
	return nil
}

// addResults appends every finished result under dir to the history at
// path, skipping runs it holds already and refusing (by name) interrupted
// or incomplete ones.
func addResults(dir, path string) (added int, skipped []string, err error) {
	root, rootErr := files.ModuleRoot()
	var rows []caphistory.Row
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && d.Name() == "ab" {
				return filepath.SkipDir // A/B trials are not nights
			}
			return nil
		}
		if !strings.HasSuffix(p, ".json") || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		res, err := result.ReadResult(p)
		if err != nil || res.Scenario == "" {
			return nil // not a result (a summary, a baseline, a study)
		}
		row := caphistory.RowFromResult(res, "")
		if err := row.Validate(); err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %v", p, err))
			return nil
		}
		if rootErr == nil {
			row.Subject = caphistory.CommitSubject(root, row.Commit)
		}
		row.Result = resultPath(root, p)
		rows = append(rows, row)
		return nil
	})
	if err != nil {
		return 0, nil, err
	}
	held, err := caphistory.Read(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, nil, err
	}
	var fresh []caphistory.Row
	for _, r := range rows {
		if slices.ContainsFunc(held, r.SameRun) {
			continue
		}
		fresh = append(fresh, r)
	}
	if err := caphistory.Append(path, fresh...); err != nil {
		return 0, skipped, err
	}
	return len(fresh), skipped, nil
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ledgerKey identifies a bisection: the scenario and the two nights'
// commits (every figure that stepped between them is bisected at once).
func ledgerKey(f caphistory.Finding) string {
	return strings.Join([]string{f.Scenario, f.Before.Commit, f.After.Commit}, "\x00")
}

// stepGroups gathers the steps of findings by scenario and pair of nights:
// figures that stepped between the same two nights are one change to
// bisect. Groups come newest first.
func stepGroups(found []caphistory.Finding) [][]caphistory.Finding {
	var groups [][]caphistory.Finding
	index := map[string]int{}
	for _, f := range found {
		if !f.Step {
			continue
		}
		k := ledgerKey(f)
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], f)
	}
	slices.SortStableFunc(groups, func(a, b []caphistory.Finding) int { return b[0].After.Date.Compare(a[0].After.Date) })
	return groups
}

type ledgerLine struct {
	findingJSON
	Culprit string `json:"culprit,omitempty"`
}

func inLedger(path string, f caphistory.Finding) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l ledgerLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		if strings.Join([]string{l.Scenario, l.Before, l.After}, "\x00") == ledgerKey(f) {
			return true, nil
		}
	}
	return false, nil
}

var culpritLine = regexp.MustCompile("(?m)^Culprit: `([0-9a-f]+)`")

func appendLedger(path string, f caphistory.Finding, out string) error {
	l := ledgerLine{findingJSON: findingsJSON([]caphistory.Finding{f})[0]}
	if m := culpritLine.FindStringSubmatch(out); m != nil {
		l.Culprit = m[1]
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return appendFile(path, string(b)+"\n")
}

const bisectChangeUsage = `usage: headroom bisect-change [-file HISTORY] [-scenario NAME] [-figure NAME] [-ab "FLAGS"]

Finds the commit behind a step the history shows: takes the newest step for
the worse (of -scenario and -figure when given) between the nights of
commits A and B, runs an A/B of A against B here (a step it does not
reproduce was the machine's: nothing is bisected), then git bisect between
them in this repository with headroom ab -bisect at every step (-run the
scenario, -primary the figure, -matters half the step), then an A/B of the
culprit against its parent.
Prints the culprit ("Culprit: ` + "`<sha>`" + ` subject") and that A/B table. The
working tree must be clean: git bisect checks out each commit it tries.

`

func bisectChangeCmd(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("bisect-change", flag.ContinueOnError)
	fl.Usage = func() { fmt.Fprint(fl.Output(), bisectChangeUsage); fl.PrintDefaults() }
	file := fl.String("file", "", historyFileFlag)
	scenario := fl.String("scenario", "", "the scenario whose step to bisect (default any)")
	figure := fl.String("figure", "", "the figure whose step to bisect, as the history prints it, e.g. 'p95 dashboard' (default any)")
	abFlags := fl.String("ab", "", `flags for every headroom ab it runs, e.g. "-short -trials 5"`)
	summary := fl.String("summary", "", "append the culprit and its A/B table to this file too")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: %s", fl.Args(), strings.SplitN(bisectChangeUsage, "\n", 2)[0])
	}
	rows, err := readHistory(historyFile(*file))
	if err != nil {
		return err
	}
	found, err := caphistory.Changes(rows, *scenario, caphistory.ChangeOptions{})
	if err != nil {
		return err
	}
	var steps []caphistory.Finding
	for _, f := range worse(found) {
		if f.Step && (*figure == "" || f.Figure == *figure) {
			steps = append(steps, f)
		}
	}
	groups := stepGroups(steps)
	if len(groups) == 0 {
		return fmt.Errorf("no step for the worse in the history%s: nothing to bisect (headroom history changes lists what it finds)", scopeOf(*scenario, *figure))
	}
	out, err := bisectChange(context.Background(), groups[0], strings.Fields(*abFlags), stdout)
	fmt.Fprint(stdout, out)
	if *summary != "" && out != "" {
		if err := appendFile(*summary, out); err != nil {
			return err
		}
	}
	return err
}

func scopeOf(scenario, figure string) string {
	var s []string
	if scenario != "" {
		s = append(s, "scenario "+scenario)
	}
	if figure != "" {
		s = append(s, "figure "+figure)
	}
	if len(s) == 0 {
		return ""
	}
	return " (" + strings.Join(s, ", ") + ")"
}

// bisectChange finds the commit behind the steps of one scenario between
// the same two nights: an A/B of the two nights' commits first (a step it
// does not reproduce is the machine's, and is not bisected), then git
// bisect run with headroom ab -bisect between the two commits, every
// figure that stepped deciding (-primary, the correction over them is
// Holm's) and -matters half the smallest step, then an A/B of the culprit
// against its parent (the bisection's own step at the culprit, when that
// parent is the good night's commit). It returns the Markdown
// to add to a summary; the A/B's own output goes to log.
func bisectChange(ctx context.Context, steps []caphistory.Finding, abFlags []string, log io.Writer) (string, error) {
	var md strings.Builder
	f := steps[0]
	fmt.Fprintf(&md, "### Bisecting the step between the nights of `%s` and `%s` (%s)\n\n", short(f.Before.Commit), short(f.After.Commit), f.Scenario)
	smallest := math.Inf(1)
	var figures []string
	for _, s := range steps {
		fmt.Fprintf(&md, "- %s\n", s)
		figures = append(figures, s.Figure)
		smallest = math.Min(smallest, math.Abs(math.Log(s.Ratio)))
	}
	md.WriteString("\n")
	good, bad := f.Before.Commit, f.After.Commit
	switch {
	case good == "" || bad == "":
		md.WriteString("A night without a commit: nothing to bisect.\n")
		return md.String(), errors.New("a night without a commit")
	case good == bad:
		md.WriteString("Both nights ran the same commit: the step is not in the code (the runner, a dependency pulled at run time, or the environment changed).\n")
		return md.String(), nil
	case f.Before.Dirty || f.After.Dirty:
		md.WriteString("A night ran uncommitted changes: its commit is not what was measured; nothing to bisect.\n")
		return md.String(), errors.New("a night of a dirty tree")
	}
	self, err := os.Executable()
	if err != nil {
		return md.String(), err
	}
	if out, err := gitOut(ctx, "status", "--porcelain", "--untracked-files=no"); err != nil {
		return md.String(), err
	} else if out != "" {
		return md.String(), fmt.Errorf("the working tree has uncommitted changes; commit or stash them first (git bisect checks out each commit):\n%s", out)
	}
	for _, c := range []string{good, bad} {
		if _, err := gitOut(ctx, "cat-file", "-e", c+"^{commit}"); err != nil {
			return md.String(), fmt.Errorf("commit %s is not in this repository: fetch its history (actions/checkout with fetch-depth: 0)", c)
		}
	}
	// The smallest change that matters: half the smallest step (on the log
	// scale), as a bisection for a change of known size should use (see
	// make bisect's MATTERS).
	matters := math.Max(0.05, math.Exp(smallest/2)-1)
	run := "^" + strings.ReplaceAll(regexp.QuoteMeta(f.Scenario), "/", "$/^") + "$"
	abArgs := append([]string{"ab", "-run", run, "-primary", strings.Join(figures, ","), "-matters", fmt.Sprintf("%.0f%%", matters*100)}, abFlags...)

	// First the two nights' commits against each other, interleaved on
	// this machine now: a step the machine made (a slower runner from one
	// night on, a noisy neighbour) moves both arms alike and does not come
	// back, and a bisection of it would name whatever commit it ends on.
	code, table, err := abTable(ctx, self, append(slices.Clone(abArgs), "-base", good, "-head", bad, "-harness", bad), log)
	if err != nil {
		return md.String(), fmt.Errorf("the A/B of the two nights' commits: %v", err)
	}
	fmt.Fprintf(&md, "The two nights' commits, `%s` against `%s`:\n\n%s\n", short(good), short(bad), table)
	switch code {
	case exitPass:
		md.WriteString("The A/B does not reproduce the step: the machine's or the nights' noise, not a commit's. Nothing bisected.\n")
		return md.String(), nil
	case exitInvalid:
		md.WriteString("The A/B could not decide at this many trials. Nothing bisected: `headroom bisect-change -ab \"-trials 10\"` tries again with more.\n")
		return md.String(), nil
	}

	culprit, atCulprit := bad, ""
	between, err := gitOut(ctx, "rev-list", "--count", good+".."+bad)
	if err != nil {
		return md.String(), err
	}
	if between != "1" {
		if _, err := gitOut(ctx, "bisect", "start", bad, good); err != nil {
			return md.String(), err
		}
		// Each step's table is kept, by the commit it tested: the step at
		// the culprit is the culprit's own A/B when its parent is the good
		// night's commit.
		stepDir, err := os.MkdirTemp("", "headroom-bisect-")
		if err != nil {
			return md.String(), err
		}
		defer os.RemoveAll(stepDir)
		step := `exec "$0" "$@" -summary "$HEADROOM_BISECT_STEPS/$(git rev-parse HEAD).md"`
		cmd := exec.CommandContext(ctx, "git", append([]string{"bisect", "run", "sh", "-c", step, self}, append(slices.Clone(abArgs), "-bisect", "-base", good)...)...)
		cmd.Env = append(os.Environ(), "HEADROOM_BISECT_STEPS="+stepDir)
		var buf strings.Builder
		cmd.Stdout, cmd.Stderr = io.MultiWriter(log, &buf), io.MultiWriter(log, &buf)
		runErr := cmd.Run()
		bisectLog, _ := gitOut(ctx, "bisect", "log")
		_, _ = gitOut(ctx, "bisect", "reset")
		m := regexp.MustCompile(`(?m)^([0-9a-f]{40}) is the first bad commit`).FindStringSubmatch(buf.String())
		if runErr != nil || m == nil {
			fmt.Fprintf(&md, "git bisect did not name a commit between `%s` and `%s`:\n\n```\n%s\n```\n", short(good), short(bad), lastLines(bisectLog, 15))
			return md.String(), fmt.Errorf("git bisect run: %v", runErr)
		}
		culprit = m[1]
		if b, err := os.ReadFile(filepath.Join(stepDir, culprit+".md")); err == nil {
			atCulprit = string(b)
		}
	}
	subject, _ := gitOut(ctx, "log", "-1", "--format=%s", culprit)
	fmt.Fprintf(&md, "Culprit: `%s` %s\n\n", culprit, subject)
	if between == "1" {
		fmt.Fprintf(&md, "(the only commit between the two nights)\n\n")
	}
	// The A/B at the culprit: its parent against it, with the table. When
	// its parent is the good night's commit, the bisection's step at the
	// culprit was that A/B already.
	parent, _ := gitOut(ctx, "rev-parse", culprit+"^")
	goodSHA, _ := gitOut(ctx, "rev-parse", good)
	if atCulprit != "" && parent != "" && parent == goodSHA {
		fmt.Fprintf(&md, "The A/B at the culprit against its parent, `%s` (the good night's commit): the bisection's own step there.\n\n", short(parent))
		md.WriteString(atCulprit)
		return md.String(), nil
	}
	_, table, err = abTable(ctx, self, append(slices.Clone(abArgs), "-base", culprit+"^", "-head", culprit, "-harness", culprit), log)
	md.WriteString(table)
	if err != nil {
		return md.String(), fmt.Errorf("the A/B at the culprit: %v", err)
	}
	return md.String(), nil
}

// abTable runs headroom ab with args (the arms among them), its own output
// to log, and returns its exit status — exitPass (no regression), exitFail
// (regressed) or exitInvalid (undecided) — and its Markdown table; an A/B
// that fails otherwise is an error.
func abTable(ctx context.Context, self string, args []string, log io.Writer) (code int, table string, err error) {
	dir, err := os.MkdirTemp("", "headroom-ab-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	summary := filepath.Join(dir, "summary.md")
	cmd := exec.CommandContext(ctx, self, append(args, "-summary", summary, "-o", filepath.Join(dir, "trials"))...)
	cmd.Stdout, cmd.Stderr = log, log
	abErr := cmd.Run()
	if b, err := os.ReadFile(summary); err == nil {
		table = string(b)
	}
	var ee *exec.ExitError
	switch {
	case abErr == nil:
		return exitPass, table, nil
	case errors.As(abErr, &ee) && (ee.ExitCode() == exitFail || ee.ExitCode() == exitInvalid):
		return ee.ExitCode(), table, nil
	}
	return 0, table, abErr
}

func short(c string) string {
	if len(c) > 7 {
		return c[:7]
	}
	return c
}

func gitOut(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}
