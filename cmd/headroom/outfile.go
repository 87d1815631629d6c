package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// outFile is headroom run's -o: the result JSON with its Markdown and HTML
// reports beside it. It is this run's from before the first request: the
// run before's files are kept as *.previous.*, a stub says the run is under
// way, and the result is rewritten after every step, so that a run killed
// at any point leaves what it measured and never an older run's verdict.
type outFile string

// claim moves the run before's files aside and writes the stub.
func (o outFile) claim(name string, params map[string]string) error {
	if o == "" {
		return nil
	}
	if err := files.Supersede(string(o)); err != nil {
		return fmt.Errorf("-o: moving the previous result aside: %w", err)
	}
	now := time.Now()
	return o.write(&loadtest.Result{Schema: result.SchemaVersion, Scenario: name, Model: "arrivals", Params: params,
		Start: now, End: now, Provenance: result.Provenance{Args: os.Args}, Verdict: result.Incomplete, Partial: true,
		Conclusion: "the run had not finished its first step when this was written: a run that stops here was killed"})
}

// fail records, in the stub, why the run ended before its load began.
func (o outFile) fail(name string, params map[string]string, err error) {
	if o == "" {
		return
	}
	now := time.Now()
	_ = o.write(&loadtest.Result{Schema: result.SchemaVersion, Scenario: name, Model: "arrivals", Params: params,
		Start: now, End: now, Provenance: result.Provenance{Args: os.Args}, Verdict: result.Incomplete, Partial: true,
		Conclusion: "no load was sent: " + err.Error()})
}

// write writes res and its reports, each atomically.
func (o outFile) write(res *loadtest.Result) error {
	if o == "" {
		return nil
	}
	if err := res.WriteFile(string(o)); err != nil {
		return err
	}
	if err := files.WriteAtomic(strings.TrimSuffix(string(o), ".json")+".md", []byte(res.Markdown())); err != nil {
		return err
	}
	return report.WriteHTML(res, string(o))
}
