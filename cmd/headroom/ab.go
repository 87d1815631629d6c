package main

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Exit statuses `git bisect run` understands, for ab -bisect.
const (
	bisectGood  = 0
	bisectBad   = 1
	bisectSkip  = 125
	bisectAbort = 128
)

// fraction is a flag of a fraction written "20%" or "0.2".
type fraction float64

func (f *fraction) String() string {
	if *f == 0 {
		return "0"
	}
	return fmt.Sprintf("%g%%", 100*float64(*f))
}

func (f *fraction) Set(s string) error {
	pct, isPct := strings.CutSuffix(strings.TrimSpace(s), "%")
	v, err := strconv.ParseFloat(pct, 64)
	if err != nil {
		return fmt.Errorf("%q: write it as a percentage (20%%) or a fraction (0.2)", s)
	}
	if isPct {
		v /= 100
	}
	if !(v >= 0 && v < 1) {
		return fmt.Errorf("%q: give at least 0%% and below 100%%", s)
	}
	*f = fraction(v)
	return nil
}

// figureNames collects -primary figure names, repeated or comma-separated.
type figureNames []string

func (n *figureNames) String() string { return strings.Join(*n, ", ") }

func (n *figureNames) Set(s string) error {
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return fmt.Errorf("%q: name each figure as the report prints it, e.g. 'p95 dashboard' or 'cpu/ok relay'", s)
		}
		*n = append(*n, name)
	}
	return nil
}

// envFlags collects repeated -base-env/-head-env K=V flags.
type envFlags []string

func (e *envFlags) String() string { return strings.Join(*e, " ") }
func (e *envFlags) Set(s string) error {
	if k, _, ok := strings.Cut(s, "="); !ok || k == "" {
		return fmt.Errorf("%q: write it as NAME=value", s)
	}
	*e = append(*e, s)
	return nil
}

const abUsage = `usage: headroom ab -run REGEXP [flags]

Compares two builds of the system under test with interleaved trials on this
machine: the scenario test runs -trials times for each arm, in blocks of one
A and one B in random order, and each figure (throughput, failures and
p50/p95/p99 of every request kind, CPU per success of every component) is
judged same, different or inconclusive with a Mann-Whitney U test and the
Hodges-Lehmann change with its interval. Every figure with enough samples
decides the verdict but the harness's cost and memory, corrected together
for their number (Holm); -primary names the figures that decide instead.
While a deciding figure is inconclusive, blocks are added up to -max-trials.
An unchanged verdict says the largest worsening it could not rule out.

Arm A builds the target from -base, arm B from -head: git refs of your
module's repository (the one headroom ab runs in), extracted with git
archive, or "." for the working tree as it is. -base-mod and -head-mod
build an arm's target from another release of its module instead
(github.com/pocketbase/pocketbase@v0.28.2, or a module directory), each
with that release's own go.mod (fixtures' Service.Module); -base-bin and
-head-bin run a prebuilt executable; -base-image and -head-image a local
image (docker backend). Whichever an arm is, the target keeps the
scenario's arguments, environment and readiness. The scenario test itself
(the harness) is built once, from -harness. The report names the build
each arm ran; each trial's result and log are kept under -o.

`

func abCmd(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("ab", flag.ContinueOnError)
	fl.Usage = func() { fmt.Fprint(fl.Output(), abUsage); fl.PrintDefaults() }
	run := fl.String("run", "", "the scenario test(s) to run, as go test -run takes it (required), e.g. 'TestLoad_Smoke/backend=local'")
	base := fl.String("base", "HEAD", `arm A's build of the target: a git ref, or "." for the working tree`)
	head := fl.String("head", ".", `arm B's build of the target: a git ref, or "." for the working tree`)
	baseMod := fl.String("base-mod", "", `arm A's target module instead of -base: a release, "github.com/x/y@v1.2.3", or a module directory`)
	headMod := fl.String("head-mod", "", `arm B's target module instead of -head (see -base-mod)`)
	baseBin := fl.String("base-bin", "", "arm A's target as a prebuilt executable instead of -base")
	headBin := fl.String("head-bin", "", "arm B's target as a prebuilt executable instead of -head")
	baseImage := fl.String("base-image", "", `arm A's target as a local image ("myorg/svc:v1", never pulled; docker backend) instead of -base`)
	headImage := fl.String("head-image", "", "arm B's target as a local image instead of -head")
	harness := fl.String("harness", ".", `where the scenario test is built from: a git ref, or "." for the working tree`)
	pkg := fl.String("pkg", "./loadtest/scenarios", "the package of the scenario test, relative to the module root")
	tags := fl.String("tags", "load", "build tags of the scenario test")
	short := fl.Bool("short", false, "run the scenario at its -short size")
	trials := fl.Int("trials", ab.DefaultTrials, "trials per arm (5 or more to be able to show a difference)")
	maxTrials := fl.Int("max-trials", 0, "most trials per arm while a deciding figure is inconclusive (neither shown the same nor different after the correction); 0 means twice -trials")
	seed := fl.Uint64("seed", 1, "seed of the trials' order")
	timeout := fl.Duration("timeout", 30*time.Minute, "bound on one trial")
	out := fl.String("o", "", "directory for the trials' results, logs and the report (default testdata/results/ab/<time>)")
	summary := fl.String("summary", "", "append the Markdown report to this file too (e.g. $GITHUB_STEP_SUMMARY)")
	bisect := fl.Bool("bisect", false, "exit as git bisect run expects: 0 no regression, 1 regressed, 125 inconclusive or unbuildable, 128 cannot run")
	var matters fraction
	fl.Var(&matters, "matters", "the smallest change of any figure that matters, e.g. 20% (default each figure's own: 5% for cost and throughput, 10% for latency); to bisect a regression of known size, about half of it")
	var primary figureNames
	fl.Var(&primary, "primary", "a figure that decides the verdict, as the report prints it, e.g. 'p95 dashboard' or 'cpu/ok relay' (repeatable or comma-separated; default every judged figure but the harness's cost and memory)")
	var baseEnv, headEnv envFlags
	fl.Var(&baseEnv, "base-env", "NAME=value set in arm A's trials (repeatable); LOADTEST_TARGET_ENV_<NAME> reaches the target itself")
	fl.Var(&headEnv, "head-env", "NAME=value set in arm B's trials (repeatable)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	fail := func(code int, err error) error {
		if *bisect && code != exitFail {
			code = bisectAbort
		}
		return &exitError{code, err}
	}
	if *run == "" || fl.NArg() > 0 {
		return fail(exitUsage, errors.New("give -run and flags only, e.g. headroom ab -run 'TestLoad_Smoke/backend=local' -base main -short"))
	}
	if _, err := regexp.Compile(*run); err != nil {
		return fail(exitUsage, fmt.Errorf("-run %q: %v", *run, err))
	}
	if *trials < 2 {
		return fail(exitUsage, fmt.Errorf("-trials %d: give at least 2 per arm (5 or more to be able to show a difference)", *trials))
	}
	if *maxTrials != 0 && *maxTrials < *trials {
		return fail(exitUsage, fmt.Errorf("-max-trials %d is below -trials %d: give at least as many, or 0 for twice -trials", *maxTrials, *trials))
	}

	ctx := loadtest.Interrupted()
	mod, err := moduleDir()
	if err != nil {
		return fail(exitUsage, err)
	}
	work, err := os.MkdirTemp("", "headroom-ab-")
	if err != nil {
		return fail(exitUsage, err)
	}
	defer os.RemoveAll(work)
	if *out == "" {
		*out = filepath.Join(mod, "testdata", "results", "ab", time.Now().UTC().Format("20060102-150405"))
	}
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

	sources := map[string]string{}
	source := func(ref string) (string, error) {
		if ref == "." {
			return mod, nil
		}
		if dir, ok := sources[ref]; ok {
			return dir, nil
		}
		dir, err := extractRef(ctx, mod, ref, filepath.Join(work, fmt.Sprintf("src-%d", len(sources))))
		if err == nil {
			logf("ab: %s extracted to %s", ref, dir)
			sources[ref] = dir
		}
		return dir, err
	}
	set := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { set[f.Name] = true })
	arms := [2]armSpec{{ref: *base, mod: *baseMod, bin: *baseBin, image: *baseImage}, {ref: *head, mod: *headMod, bin: *headBin, image: *headImage}}
	for arm, side := range []string{"base", "head"} {
		a := &arms[arm]
		if err := a.check(ab.Arm(arm), side, set[side]); err != nil {
			return fail(exitUsage, err)
		}
		if a.env != "" {
			continue
		}
		dir, err := source(a.ref)
		if err != nil {
			return fail(exitUsage, fmt.Errorf("arm %s (%s): %w", ab.Arm(arm), a.ref, err))
		}
		a.env, a.value = fixtures.TargetSourceEnv, dir
		a.version = refVersion(mod, a.ref)
	}
	harnessSrc, err := source(*harness)
	if err != nil {
		return fail(exitUsage, fmt.Errorf("-harness %s: %w", *harness, err))
	}
	bin := filepath.Join(work, "harness.test")
	logf("ab: building the scenario test %s (tags %q) from %s", *pkg, *tags, *harness)
	build := exec.CommandContext(ctx, "go", "test", "-c", "-tags", *tags, "-o", bin, *pkg)
	build.Dir = harnessSrc
	if b, err := build.CombinedOutput(); err != nil {
		code := exitUsage
		if *bisect {
			code = bisectSkip // this commit's test does not build
		}
		return &exitError{code, fmt.Errorf("the scenario test does not build: %v\n%s", err, b)}
	}
	pkgDir := filepath.Join(harnessSrc, *pkg)
	noBaselines := filepath.Join(work, "no-baselines")
	// Made once the arms and the harness exist: a refused ab leaves nothing.
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fail(exitUsage, err)
	}

	builds := &armBuilds{}
	trial := func(ctx context.Context, arm ab.Arm, i int) ([]*loadtest.Result, error) {
		dir := filepath.Join(*out, fmt.Sprintf("%s%d", arm, i+1))
		args := []string{"-test.run", *run, "-test.count=1", "-test.v", "-test.timeout", timeout.String()}
		if *short {
			args = append(args, "-test.short")
		}
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = pkgDir
		cmd.Env = append(os.Environ(),
			"LOADTEST_RESULTS_DIR="+filepath.Join(dir, "results"),
			"LOADTEST_BASELINE_DIR="+noBaselines,
			"LOADTEST_GOLDEN_DIR="+noBaselines, // a harness older than the name

			"HEADROOM_AB_ARM="+arm.String())
		cmd.Env = append(cmd.Env, arms[arm].env+"="+arms[arm].value, fixtures.TargetVersionEnv+"="+arms[arm].version)
		cmd.Env = append(cmd.Env, [2]envFlags{baseEnv, headEnv}[arm]...)
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = time.Minute
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		logFile, err := os.Create(filepath.Join(dir, "test.log"))
		if err != nil {
			return nil, err
		}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		runErr := cmd.Run()
		logFile.Close()
		rs, err := readResults(filepath.Join(dir, "results"))
		if err != nil {
			return nil, err
		}
		builds.note(arm, rs)
		if len(rs) == 0 {
			tail, _ := os.ReadFile(filepath.Join(dir, "test.log"))
			return nil, fmt.Errorf("no result written (%v); last lines of %s:\n%s", runErr, filepath.Join(dir, "test.log"), lastLines(string(tail), 8))
		}
		return rs, nil
	}
	band := ""
	if matters > 0 {
		band = fmt.Sprintf("; no change below %s matters", matters.String())
	}
	if len(primary) > 0 {
		band += "; deciding figures: " + primary.String()
	}
	return abRun{
		cfg: ab.Config{Trials: *trials, MaxTrials: *maxTrials, Seed: *seed, Matters: float64(matters), Primary: primary, Logf: logf},
		header: fmt.Sprintf("# A/B: %s\n\nA = %s%s, B = %s%s; harness %s; %d trials per arm at first, seed %d%s; trials in `%s`.\n\n",
			*run, arms[0].String(), envNote(baseEnv), arms[1].String(), envNote(headEnv), *harness, *trials, *seed, band, *out),
		builds: builds.markdown,
		bisect: *bisect, base: *base, out: *out, summary: *summary,
	}.run(ctx, trial, stdout)
}

// armSpec is what an arm's target is built from: a git ref of the user's
// module, a module (a release or a directory), a binary or an image, and
// how a trial tells the scenario (a fixtures environment variable).
type armSpec struct {
	ref, mod, bin, image string
	env, value           string // fixtures.Target*Env and its value
	version              string // fixtures.TargetVersionEnv: "" lets the build name itself
}

// check validates the arm's flags (side is "base" or "head"; refSet says
// whether -base/-head was given) and, for all but a git ref, sets env and
// value.
func (a *armSpec) check(arm ab.Arm, side string, refSet bool) error {
	var given []string
	for _, f := range []struct{ flag, v string }{{"-" + side + "-mod", a.mod}, {"-" + side + "-bin", a.bin}, {"-" + side + "-image", a.image}} {
		if f.v != "" {
			given = append(given, f.flag)
		}
	}
	if refSet {
		given = append([]string{"-" + side}, given...)
	}
	if len(given) > 1 {
		return fmt.Errorf("arm %s is given by %s: give one", arm, strings.Join(given, " and "))
	}
	switch {
	case a.mod != "" && strings.Contains(a.mod, "@"):
		a.env, a.value = fixtures.TargetModuleEnv, a.mod
	case a.mod != "":
		abs, err := filepath.Abs(a.mod)
		if err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
			return fmt.Errorf("arm %s: %q is neither a module at a version (example.com/x@v1.2.3) nor a directory holding a go.mod", arm, a.mod)
		}
		a.env, a.value = fixtures.TargetModuleEnv, abs
	case a.bin != "":
		abs, err := filepath.Abs(a.bin)
		if err != nil {
			return err
		}
		if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
			return fmt.Errorf("arm %s: -%s-bin %q is not an executable file", arm, side, a.bin)
		}
		a.env, a.value = fixtures.TargetBinaryEnv, abs
	case a.image != "":
		a.env, a.value = fixtures.TargetImageEnv, a.image
	}
	return nil
}

// String is how the report's header names the arm.
func (a armSpec) String() string {
	switch {
	case a.mod != "":
		return a.mod
	case a.bin != "":
		return "binary " + a.bin
	case a.image != "":
		return "image " + a.image
	}
	return a.ref
}

// refVersion is what results call a build from ref: "main@c8a90fa1b2c3",
// "HEAD@…", or "working tree@…" (+dirty when it has changes) for ".".
func refVersion(mod, ref string) string {
	name, commit := ref, ref
	if ref == "." {
		name, commit = "working tree", "HEAD"
	}
	out, err := exec.Command("git", "-C", mod, "rev-parse", commit+"^{commit}").Output()
	full := strings.TrimSpace(string(out))
	if err != nil || len(full) < 12 {
		return "" // not a repository: the build names itself
	}
	if len(ref) >= 7 && strings.HasPrefix(full, ref) {
		return full[:12] // a commit needs no name
	}
	v := name + "@" + full[:12]
	if ref == "." {
		if st, err := exec.Command("git", "-C", mod, "status", "--porcelain", "--untracked-files=no", ".").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
			v += "+dirty"
		}
	}
	return v
}

// abRun is what headroom ab does once the builds are ready: run the
// trials, write the report and map the verdict to an exit status.
type abRun struct {
	cfg     ab.Config
	header  string        // the Markdown report's title and setting
	builds  func() string // what each arm's target was, once the trials ran
	bisect  bool          // exit as git bisect run expects
	base    string        // arm A's ref, for messages
	out     string        // the directory for ab.md and ab.json
	summary string        // a file to append the Markdown to, or ""
}

func (r abRun) run(ctx context.Context, trial ab.TrialFunc, stdout io.Writer) error {
	// abort is the status of a run that cannot go on: to git bisect run
	// anything but 128 would be a verdict on the commit.
	abort := func(code int) int {
		if r.bisect {
			return bisectAbort
		}
		return code
	}
	reports, err := ab.Run(ctx, r.cfg, trial)
	switch {
	case err != nil && ctx.Err() != nil:
		return &exitError{abort(exitInvalid), fmt.Errorf("interrupted: %w (the trials so far are in %s)", err, r.out)}
	case errors.Is(err, ab.ErrUnknownFigure):
		return &exitError{abort(exitUsage), fmt.Errorf("-primary: %w", err)}
	case err != nil:
		return &exitError{abort(exitUsage), err}
	}

	var md strings.Builder
	md.WriteString(r.header)
	if r.builds != nil {
		md.WriteString(r.builds())
	}
	for _, rep := range reports {
		md.WriteString(rep.Markdown())
		md.WriteString("\n")
	}
	verdict := ab.Worst(reports)
	fmt.Fprintf(&md, "**Verdict: %s.**\n", verdict)
	fmt.Fprint(stdout, md.String())
	if err := os.WriteFile(filepath.Join(r.out, "ab.md"), []byte(md.String()), 0o644); err != nil {
		return &exitError{abort(exitUsage), err}
	}
	if b, err := json.MarshalIndent(reports, "", "  "); err == nil {
		os.WriteFile(filepath.Join(r.out, "ab.json"), append(b, '\n'), 0o644)
	}
	if r.summary != "" {
		f, err := os.OpenFile(r.summary, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			f.WriteString(md.String())
			f.Close()
		}
	}

	baseless := true
	for _, rep := range reports {
		baseless = baseless && rep.Trials[ab.A] == 0
	}
	switch {
	case r.bisect && baseless:
		return &exitError{bisectAbort, fmt.Errorf("arm A (%s) gave no valid result: the good build cannot be measured", r.base)}
	case verdict == ab.Regressed:
		return &exitError{exitFail, nil}
	case verdict == ab.Undecided && r.bisect:
		return &exitError{bisectSkip, nil}
	case verdict == ab.Undecided:
		return &exitError{exitInvalid, nil}
	}
	return nil
}

func envNote(env envFlags) string {
	if len(env) == 0 {
		return ""
	}
	return " (" + env.String() + ")"
}

// moduleDir returns the main module's root directory.
func moduleDir() (string, error) {
	b, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(b))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside a Go module: run headroom ab from your module, where the scenario test lives")
	}
	return filepath.Dir(gomod), nil
}

// extractRef writes the tree of ref (git archive) into dst and returns the
// directory in it that corresponds to the module directory mod.
func extractRef(ctx context.Context, mod, ref, dst string) (string, error) {
	top, err := exec.Command("git", "-C", mod, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("not in a git repository (%v): give \".\" instead of a ref", err)
	}
	repo := strings.TrimSpace(string(top))
	rel, err := filepath.Rel(repo, mod)
	if err != nil {
		return "", err
	}
	if err := exec.Command("git", "-C", repo, "rev-parse", "--verify", "--quiet", ref+"^{commit}").Run(); err != nil {
		return "", fmt.Errorf("%q is not a commit of %s", ref, repo)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", repo, "archive", "--format=tar", ref)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return "", err
	}
	xerr := untar(pipe, dst)
	io.Copy(io.Discard, pipe)
	if err := cmd.Wait(); err != nil {
		return "", fmt.Errorf("git archive %s: %v %s", ref, err, stderr.String())
	}
	if xerr != nil {
		return "", xerr
	}
	return filepath.Join(dst, rel), nil
}

// untar extracts a tar stream of regular files, directories and symlinks
// into dst, refusing paths that leave it.
func untar(r io.Reader, dst string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Join(dst, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(name, filepath.Clean(dst)+string(filepath.Separator)) && name != filepath.Clean(dst) {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(name, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, name)
		case tar.TypeReg:
			if err = os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
				return err
			}
			var f *os.File
			if f, err = os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(h.Mode)&0o777|0o600); err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return err
		}
	}
}

// readResults reads every result under dir.
func readResults(dir string) ([]*loadtest.Result, error) {
	var out []*loadtest.Result
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return filepath.SkipAll
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".json") || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		res, err := result.ReadResult(p)
		if err != nil {
			return err
		}
		out = append(out, res)
		return nil
	})
	return out, err
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "    " + strings.Join(lines, "\n    ")
}

// armBuilds notes what each arm's target was, from its trials' results:
// the target component's version and build.
type armBuilds struct {
	mu  sync.Mutex
	arm [2][]string
}

func (b *armBuilds) note(arm ab.Arm, rs []*loadtest.Result) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, r := range rs {
		for _, c := range r.Environment.System.Components {
			if c.Role != result.RoleTarget {
				continue
			}
			what := c.Name + " " + c.Version
			switch {
			case c.Build != nil:
				what = fmt.Sprintf("%s %s (%s)", c.Name, c.Version, c.Build)
			case c.Image != "" && c.Digest != "":
				what = fmt.Sprintf("%s %s (image %s, %s)", c.Name, c.Version, c.Image, shortDigest(c.Digest))
			}
			if !slices.Contains(b.arm[arm], what) {
				b.arm[arm] = append(b.arm[arm], what)
			}
		}
	}
}

// shortDigest shortens "sha256:<64 hex>" to its first 12 hex digits.
func shortDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 && len(d) > i+13 {
		return d[:i+13]
	}
	return d
}

// markdown is the report's line naming each arm's build.
func (b *armBuilds) markdown() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.arm[0]) == 0 && len(b.arm[1]) == 0 {
		return ""
	}
	return fmt.Sprintf("Builds: A ran %s; B ran %s.\n\n", cmp.Or(strings.Join(b.arm[0], ", "), "nothing"), cmp.Or(strings.Join(b.arm[1], ", "), "nothing"))
}
