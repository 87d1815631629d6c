package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/shard"
)

// parseShard reads -shard I/N, -start-at and -step-gap; the zero Shard when
// -shard is not given.
func parseShard(spec, startAt string, gap time.Duration) (result.Shard, error) {
	if spec == "" {
		if startAt != "" {
			return result.Shard{}, errors.New("-start-at is for shards; give -shard I/N too (0/1 for one aligned process)")
		}
		return result.Shard{}, nil
	}
	i, n, ok := strings.Cut(spec, "/")
	idx, err1 := strconv.Atoi(i)
	count, err2 := strconv.Atoi(n)
	if !ok || err1 != nil || err2 != nil || count < 1 || idx < 0 || idx >= count {
		return result.Shard{}, fmt.Errorf("-shard %q: write I/N with 0 <= I < N, e.g. -shard 0/3", spec)
	}
	if startAt == "" {
		return result.Shard{}, errors.New("-shard needs -start-at, the same instant for every shard, e.g. -start-at " + time.Now().Add(time.Minute).UTC().Truncate(time.Second).Format(time.RFC3339))
	}
	at, err := time.Parse(time.RFC3339Nano, startAt)
	if err != nil {
		return result.Shard{}, fmt.Errorf("-start-at %q: give an RFC 3339 instant, e.g. 2026-12-01T12:00:00Z", startAt)
	}
	return result.Shard{Index: idx, Count: count, StartAt: at, Gap: gap}, nil
}

// cliChecks are headroom run's checks, from its flags; headroom merge
// rebuilds them from a shard's params.
func cliChecks(kind string, p95, p99 time.Duration, maxErr float64) []loadtest.Check {
	checks := []loadtest.Check{
		loadtest.LatencyBelow(kind, 95, p95),
		loadtest.FailuresBelow(kind, maxErr),
	}
	if p99 > 0 {
		checks = append(checks, loadtest.LatencyBelow(kind, 99, p99))
	}
	return checks
}

// keepStep returns the OnStep of a run: it rewrites -o after every step,
// and -emit-result prints the result so far to stdout, so that a run killed
// mid-way leaves the steps it finished.
func keepStep(out outFile, emit bool, stdout io.Writer) func(*loadtest.Result) {
	return func(res *loadtest.Result) {
		if err := out.write(res); err != nil {
			fmt.Fprintf(os.Stderr, "headroom run: %v\n", err)
		}
		if emit {
			if err := shard.Emit(stdout, res); err != nil {
				fmt.Fprintf(os.Stderr, "headroom run: %v\n", err)
			}
		}
	}
}

// emitResult prints the final result between the markers.
func emitResult(w io.Writer, res *loadtest.Result) error { return shard.Emit(w, res) }

// mergeCmd merges the shards' results of one run into one result.
func mergeCmd(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("merge", flag.ContinueOnError)
	out := fl.String("o", "", "write the merged result JSON here (and the Markdown report beside it)")
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: headroom merge [-o MERGED.json] SHARD.json|LOGS...   (- for stdin: kubectl logs)")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() == 0 {
		return errors.New("give the shards' result files or logs (kubectl logs -l headroom.dev/run=NAME --tail=-1)")
	}
	byIndex := map[int]*loadtest.Result{}
	var order []int
	for _, name := range fl.Args() {
		var r io.Reader = os.Stdin
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			r = f
		}
		rs, err := shard.Read(name, r)
		if err != nil {
			return err
		}
		for _, res := range rs {
			if res.Shard == nil {
				return fmt.Errorf("%s: a result that is not a shard's (run each generator with -shard I/N)", name)
			}
			if _, seen := byIndex[res.Shard.Index]; !seen {
				order = append(order, res.Shard.Index)
			}
			byIndex[res.Shard.Index] = res // the latest read wins
		}
	}
	var results []*loadtest.Result
	for _, i := range order {
		results = append(results, byIndex[i])
	}
	s, err := cliScenario(results[0])
	if err != nil {
		return err
	}
	merged, err := shard.Merge(s, results)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := merged.WriteFile(*out); err != nil {
			return err
		}
		md := strings.TrimSuffix(*out, ".json") + ".md"
		if err := os.WriteFile(md, []byte(merged.Markdown()), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprint(stdout, merged.Markdown())
	return verdictError(merged)
}

// cliScenario rebuilds the scenario of headroom run from a shard's result:
// its checks from the params the run recorded, its ladder from the plan.
func cliScenario(res *loadtest.Result) (loadtest.Scenario, error) {
	p := res.Params
	if res.Plan.Type != "ladder" {
		return loadtest.Scenario{}, fmt.Errorf("the shards ran a %s plan; sharded runs are ladders", res.Plan.Type)
	}
	p95, err1 := time.ParseDuration(p["p95"])
	p99, err2 := time.ParseDuration(p["p99"])
	maxErr, err3 := strconv.ParseFloat(p["max-errors"], 64)
	if p["method"] == "" || errors.Join(err1, err2, err3) != nil {
		return loadtest.Scenario{}, fmt.Errorf("result of %q: its params do not hold headroom run's checks (method, p95, p99, max-errors); merge results of headroom run shards, or call shard.Merge with the scenario", res.Scenario)
	}
	return loadtest.Scenario{
		Name:   res.Scenario,
		Checks: cliChecks(strings.ToLower(p["method"]), p95, p99, maxErr),
		Plan:   loadtest.Ladder{Steps: res.Plan.Steps},
	}, nil
}

// k8sCmd prints the Kubernetes manifests of a sharded run.
func k8sCmd(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("k8s", flag.ContinueOnError)
	name := fl.String("name", "headroom-run", "name of the Job and its ConfigMap (a DNS label)")
	namespace := fl.String("namespace", "", "namespace (empty: kubectl's current one)")
	image := fl.String("image", "", "generator image: the static headroom binary FROM scratch (required)")
	shards := fl.Int("shards", 3, "number of generator pods (shards)")
	cpu := fl.String("cpu", "1", "CPU of each shard (requests = limits)")
	memory := fl.String("memory", "512Mi", "memory of each shard (requests = limits)")
	startIn := fl.Duration("start-in", 2*time.Minute, "start the plan this long after now (time to schedule the pods and pull the image)")
	startAt := fl.String("start-at", "", "start the plan at this RFC 3339 instant instead of -start-in")
	deadline := fl.Duration("deadline", time.Hour, "bound on the Job's run (activeDeadlineSeconds)")
	fl.Usage = func() {
		fmt.Fprintln(fl.Output(), "usage: headroom k8s -image IMG [-shards N] [flags] -- <headroom run flags>")
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		return err
	}
	runArgs := fl.Args()
	hasURL := false
	for _, a := range runArgs {
		hasURL = hasURL || a == "-url" || a == "--url" || strings.HasPrefix(a, "-url=") || strings.HasPrefix(a, "--url=")
	}
	if !hasURL {
		return errors.New("give headroom run's flags after --, at least -url (and -allow-remote for a Service: the loopback guard applies in every shard)")
	}
	at := time.Now().Add(*startIn).UTC().Truncate(time.Second)
	if *startAt != "" {
		var err error
		if at, err = time.Parse(time.RFC3339Nano, *startAt); err != nil {
			return fmt.Errorf("-start-at %q: give an RFC 3339 instant", *startAt)
		}
	}
	b, err := shard.Manifests(shard.Job{Name: *name, Namespace: *namespace, Image: *image, Shards: *shards,
		Args: runArgs, StartAt: at, CPU: *cpu, Memory: *memory, Deadline: *deadline})
	if err != nil {
		return err
	}
	_, err = stdout.Write(b)
	return err
}
