package loadtest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Test runs s as part of the test t and returns its result, never nil. It
// is what a TestLoad_* function calls:
//
//   - the run logs progress to t.Logf and stops cleanly before the test's
//     deadline or on an interrupt (SIGINT, SIGTERM), keeping what it measured;
//   - the result is written to testdata/results/<Test>/<sub>.json and .md,
//     also when the run failed or was interrupted (then marked partial);
//   - it is compared with testdata/golden/<Test>/<sub>.json when the
//     environment class matches; -loadtest.update rewrites that baseline;
//   - a malformed scenario or an unwritable result fails the test at once.
//
// Checks and regressions are left to the caller, who decides:
//
//	res := loadtest.Test(t, s)
//	if err := res.Err(); err != nil { t.Error(err) }
//	if err := res.Regressions(); err != nil { t.Error(err) }
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
	resultPath, goldenPath, err := Paths(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range sortedKeys(s.Params) {
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

	res, runErr := Run(ctx, s)
	if res == nil { // only a malformed scenario, caught above
		t.Fatal(runErr)
	}
	res.Provenance = provenance()

	switch {
	case *update && (res.Partial || len(res.Invalid()) > 0):
		t.Logf("baseline %s not updated: the run is %s", goldenPath, res.Verdict)
	case *update:
		if err := NewBaseline(res, Tolerances{}).WriteFile(goldenPath); err != nil {
			t.Errorf("baseline: %v", err)
		} else {
			t.Logf("baseline %s updated (capacity %g)", goldenPath, res.Capacity)
		}
	}
	cmp, err := CompareWithBaseline(res, goldenPath)
	if err != nil {
		t.Errorf("baseline: %v", err)
	} else {
		res.Baseline = cmp
		switch {
		case cmp.Missing:
			t.Logf("no baseline at %s; record one with -loadtest.update", goldenPath)
		case cmp.Skipped != "":
			t.Logf("baseline comparison skipped: %s", cmp.Skipped)
		}
	}

	if err := res.WriteFile(resultPath); err != nil {
		t.Fatalf("write result: %v", err)
	}
	if err := writeAtomic(strings.TrimSuffix(resultPath, ".json")+".md", []byte(res.Markdown())); err != nil {
		t.Fatalf("write report: %v", err)
	}
	rel := resultPath
	if root, err := ModuleRoot(); err == nil {
		if r, err := filepath.Rel(root, resultPath); err == nil {
			rel = r
		}
	}
	t.Logf("%s: capacity %g, %s; result in %s", res.Scenario, res.Capacity, res.Verdict, rel)
	if runErr != nil {
		t.Errorf("run interrupted (%v); the partial result is in %s", runErr, rel)
	}
	return res
}
