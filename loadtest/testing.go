package loadtest

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// update is -loadtest.update, registered only in test binaries.
var update = func() *bool {
	if testing.Testing() {
		return flag.Bool("loadtest.update", false, "rewrite the baselines in testdata/baselines from this run (LOADTEST_BASELINE_RUNS runs, default 3)")
	}
	return new(bool)
}()

// defaultBaselineRuns is how many runs -loadtest.update measures a
// baseline's spread from, unless LOADTEST_BASELINE_RUNS says otherwise.
const defaultBaselineRuns = 3

// Test runs s as part of the test t and returns its result, never nil. It
// is what a TestLoad_* function calls:
//
//   - the run logs progress to t.Logf and stops cleanly before the test's
//     deadline or on an interrupt (SIGINT, SIGTERM), keeping what it measured;
//   - the result is written to testdata/results/<Test>/<sub>.json and .md:
//     first as an incomplete stub (so an older result never passes for this
//     run's), then after every step, and at the end — also when the run
//     failed or was interrupted;
//   - it is compared with testdata/baselines/<Test>/<sub>.json; with
//     -loadtest.update the scenario runs LOADTEST_BASELINE_RUNS times
//     (default 3) and the baseline is rewritten from their spread;
//   - a malformed scenario or an unwritable result fails the test at once.
//
// The verdict is the caller's to act on, in one place:
//
//	res := loadtest.Test(t, s)
//	if err := res.Err(); err != nil { t.Error(err) } // breaches, invalid steps, regressions
func Test(t testing.TB, s Scenario) *Result {
	t.Helper()
	if s.Name == "" {
		s.Name = t.Name()
	}
	if s.Logf == nil {
		s.Logf = t.Logf
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	shortDefaults(&s, testing.Short())
	if s.SeriesEvery == 0 {
		every, err := seriesEvery()
		if err != nil {
			t.Fatal(err)
		}
		s.SeriesEvery = every
	}
	resultPath, baselinePath, err := files.ResultPaths(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	runs := 1
	if *update {
		if runs, err = baselineRuns(); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Params)) {
		if tt, ok := t.(interface{ Attr(string, string) }); ok {
			tt.Attr(k, s.Params[k])
		}
	}

	ctx, stop := context.WithCancelCause(t.Context())
	defer stop(nil)
	defer context.AfterFunc(Interrupted(), func() { stop(context.Cause(Interrupted())) })()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			// Leave time to drain, write the result and tear the stack down.
			margin := min(max(time.Until(dl)/10, 5*time.Second), time.Minute)
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-margin))
			defer cancel()
		}
	}

	defer claimPath(t).tested()
	profileKnob(&s, resultPath)
	write := func(res *Result) error {
		res.Short = testing.Short()
		relativeProfiles(res, resultPath)
		return writeResult(res, resultPath)
	}
	if err := write(stub(s)); err != nil {
		t.Fatal(err)
	}
	onStep := s.OnStep
	s.OnStep = func(res *Result) {
		if onStep != nil {
			onStep(res)
		}
		if err := write(res); err != nil {
			t.Error(err)
		}
	}

	var all []*Result
	var res *Result
	for i := range runs {
		if runs > 1 {
			t.Logf("baseline run %d of %d", i+1, runs)
		}
		var runErr error
		res, runErr = Run(ctx, s)
		if res == nil { // only a malformed scenario, caught above
			t.Fatal(runErr)
		}
		res.Short = testing.Short()
		all = append(all, res)
		if res.Partial || len(res.Invalid()) > 0 {
			break
		}
	}
	if *update {
		updateBaseline(t, baselinePath, all)
	}
	cmp, err := result.CompareWithBaseline(res, baselinePath)
	if err != nil {
		t.Errorf("baseline: %v", err)
	} else {
		res.Baseline = cmp
		switch {
		case cmp.Missing:
			t.Logf("no baseline at %s; record one with -loadtest.update", baselinePath)
		case cmp.Skipped != "":
			t.Logf("baseline comparison skipped: %s", cmp.Skipped)
		}
		for _, n := range cmp.NotCompared {
			t.Logf("baseline: not compared: %s", n)
		}
	}
	if err := write(res); err != nil {
		t.Fatal(err)
	}
	if err := appendStepSummary(res); err != nil {
		t.Errorf("GITHUB_STEP_SUMMARY: %v", err)
	}
	t.Logf("%s: capacity %s, %s; result in %s", res.Scenario, res.CapacityText(), res.Verdict, relToModule(resultPath))
	return res
}

// writeResult writes res at path atomically, with its Markdown report and
// every registered writer's file beside it.
func writeResult(res *Result, path string) error {
	if err := res.WriteFile(path); err != nil {
		return fmt.Errorf("write result: %w", err)
	}
	if err := files.WriteAtomic(strings.TrimSuffix(path, ".json")+".md", []byte(res.Markdown())); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	for _, w := range registeredWriters() {
		if err := w.fn(res, path); err != nil {
			return fmt.Errorf("write %s: %w", w.name, err)
		}
	}
	return nil
}

// A claim is a test's hold on its result path (Claim).
type claim struct {
	mu  sync.Mutex
	ran bool // Test wrote a result there
}

func (c *claim) tested() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ran = true
}

var claims struct {
	sync.Mutex
	byPath map[string]*claim
}

// Claim makes the result path of the test t this run's before anything
// else of the run happens: the files of the run before are kept beside it
// as <sub>.previous.json (and .md, .logs, …), and a stub says that this run
// is under way, so that a run that dies — in an image build, the start-up
// of the system under test, seeding, anywhere — leaves its own incomplete
// result and never an older run's verdict standing as the current one.
// fixtures.Start and Test claim; a test that starts its system under test
// by other means calls it first. A test claims its path once per process.
//
// A test that ends without calling Test leaves, when it failed, the stub
// saying so; when it passed or was skipped, nothing.
func Claim(t testing.TB) {
	t.Helper()
	claimPath(t)
}

// claimPath is Claim, returning the claim for Test to mark.
func claimPath(t testing.TB) *claim {
	t.Helper()
	path, _, err := files.ResultPaths(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	claims.Lock()
	c, held := claims.byPath[path]
	if !held {
		if claims.byPath == nil {
			claims.byPath = map[string]*claim{}
		}
		c = &claim{}
		claims.byPath[path] = c
	}
	claims.Unlock()
	if held {
		return c
	}
	if err := files.Supersede(path); err != nil {
		t.Fatalf("loadtest: moving the previous result at %s aside: %v", path, err)
	}
	stub := &Result{Schema: result.SchemaVersion, Scenario: t.Name(), Short: testing.Short(), Start: time.Now(), End: time.Now(),
		Provenance: provenance(), Environment: fingerprint(result.System{}), Verdict: result.Incomplete, Partial: true,
		Conclusion: "the run had not begun its load when this was written (building images, starting the system under test, seeding): a run that stops here died or was killed before its first step"}
	if err := writeResult(stub, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.mu.Lock()
		ran := c.ran
		c.mu.Unlock()
		switch {
		case ran:
		case t.Failed():
			stub.End = time.Now()
			stub.Conclusion = "the test failed before its load began (see its log): nothing was measured"
			_ = writeResult(stub, path)
		default:
			for _, ext := range []string{".json", ".md", ".html"} {
				_ = os.Remove(strings.TrimSuffix(path, ".json") + ext)
			}
		}
	})
	return c
}

type namedWriter struct {
	name string
	fn   func(res *Result, jsonPath string) error
}

var writers struct {
	sync.Mutex
	list []namedWriter
}

// RegisterWriter adds a writer that [Test] calls each time it writes a
// result: before the run, after every step and at the end. Call it from a
// TestMain, before the tests run:
//
//	loadtest.RegisterWriter("html", report.WriteHTML)
//
// makes every TestLoad_* of the test binary leave an HTML report beside
// its JSON. A writer writes a form of res beside its JSON file at
// jsonPath. Registering a name again replaces the writer.
func RegisterWriter(name string, w func(res *Result, jsonPath string) error) {
	writers.Lock()
	defer writers.Unlock()
	for i := range writers.list {
		if writers.list[i].name == name {
			writers.list[i].fn = w
			return
		}
	}
	writers.list = append(writers.list, namedWriter{name, w})
}

func registeredWriters() []namedWriter {
	writers.Lock()
	defer writers.Unlock()
	return slices.Clone(writers.list)
}

// stub is the result written before a run starts: incomplete, so that a
// run killed before its first step leaves no older result behind its name.
func stub(s Scenario) *Result {
	return &Result{
		Schema: result.SchemaVersion, Scenario: s.Name, Model: modelOf(s.Workload), Plan: describePlan(s.Plan),
		Params: s.Params, Seed: s.Seed, Start: time.Now(), End: time.Now(), Provenance: provenance(),
		Environment: fingerprint(s.System), Verdict: result.Incomplete, Partial: true,
		Conclusion: "the run had not finished its first step when this was written; a run that stops here was killed",
	}
}

// updateBaseline rewrites the baseline at path from the runs, unless one of
// them cannot vouch for the target.
func updateBaseline(t testing.TB, path string, runs []*Result) {
	t.Helper()
	for i, r := range runs {
		if r.Partial || len(r.Invalid()) > 0 {
			t.Logf("baseline %s not updated: run %d is %s", path, i+1, r.Verdict)
			return
		}
	}
	b, err := result.NewBaseline(result.Tolerances{}, runs...)
	if err == nil {
		err = b.WriteFile(path)
	}
	if err != nil {
		t.Errorf("baseline: %v", err)
		return
	}
	t.Logf("baseline %s updated from %d run(s): capacity %g–%g", relToModule(path), len(runs), b.Capacity.Min, b.Capacity.Max)
	if len(b.LeftOut) > 0 {
		t.Logf("baseline: figures of steps that did not pass are left out: %s", strings.Join(b.LeftOut, "; "))
	}
}

// baselineRuns reads LOADTEST_BASELINE_RUNS.
func baselineRuns() (int, error) {
	v := os.Getenv("LOADTEST_BASELINE_RUNS")
	if v == "" {
		return defaultBaselineRuns, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 50 {
		return 0, fmt.Errorf("LOADTEST_BASELINE_RUNS=%q: give the number of runs a baseline is measured from, 1 to 50", v)
	}
	return n, nil
}

// appendStepSummary appends the result's Markdown report to the file
// GITHUB_STEP_SUMMARY names, when it is set: a GitHub Actions job then
// shows every scenario's verdict and tables on its summary page.
func appendStepSummary(res *Result) error {
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(res.Markdown() + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// seriesEvery reads LOADTEST_SERIES_EVERY: the window of the result's
// timeline, or "off".
func seriesEvery() (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv("LOADTEST_SERIES_EVERY"))
	switch v {
	case "":
		return 0, nil
	case "off":
		return -1, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 100*time.Millisecond {
		return 0, fmt.Errorf("LOADTEST_SERIES_EVERY=%q: give the window of the result's timeline, 100ms or more (default 1s), or off", v)
	}
	return d, nil
}

// relToModule returns path relative to the module root when it is inside.
func relToModule(path string) string {
	if root, err := files.ModuleRoot(); err == nil {
		if r, err := filepath.Rel(root, path); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
	}
	return path
}

// shortScheduleLag is the default schedule-lag bound of the self-check in
// a -short run of Test: such a run checks correctness on a shared
// machine, as latency bars are for full-size runs, and there one stall of
// the machine at a step's edge — the target and its stack sharing two
// cores with the generator — made late starts of 50-70 ms with the
// generator at a few percent of a core. A generator that cannot keep up
// still shows: it falls further behind the longer it runs.
const shortScheduleLag = 250 * time.Millisecond

// shortDefaults sets the self-check's bounds of a -short run where the
// scenario left them to the default: the schedule-lag bound is
// shortScheduleLag, and the host's figures are recorded but not judged —
// a -short run checks correctness, and a shared runner whose hypervisor
// takes an eighth of its cores (seen on CI: 0.25 of 2) would void every
// breach a scenario checks for.
func shortDefaults(s *Scenario, short bool) {
	if !short {
		return
	}
	if s.SelfCheck.MaxScheduleLag == 0 {
		s.SelfCheck.MaxScheduleLag = shortScheduleLag
	}
	if s.SelfCheck.MaxHostSteal == 0 {
		s.SelfCheck.MaxHostSteal = -1
	}
	if s.SelfCheck.MaxHostOther == 0 {
		s.SelfCheck.MaxHostOther = -1
	}
}
