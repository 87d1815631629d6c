package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// headerFlags collects repeated -header "Name: value" flags.
type headerFlags []httpc.Header

func (h *headerFlags) String() string { return fmt.Sprint(*h) }
func (h *headerFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, ":")
	if !ok {
		return fmt.Errorf("header %q: write it as 'Name: value'", s)
	}
	*h = append(*h, httpc.Header{Name: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
	return nil
}

func runCmd(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("run", flag.ContinueOnError)
	target := fl.String("url", "", "target URL (required); loopback only unless -allow-remote")
	method := fl.String("method", "GET", "HTTP method")
	body := fl.String("body", "", "request body")
	var headers headerFlags
	fl.Var(&headers, "header", "request header 'Name: value' (repeatable)")
	rates := fl.String("rates", "50,100,200", "ladder of arrival rates per second, comma-separated")
	ramp := fl.Duration("ramp", 5*time.Second, "ramp before each step")
	hold := fl.Duration("hold", 20*time.Second, "hold (measured) of each step")
	knee := fl.Bool("knee", false, "search for the knee instead of a ladder: from -start by -factor up to -max")
	start := fl.Float64("start", 100, "knee: first rate")
	factor := fl.Float64("factor", 2, "knee: growth factor")
	maxRate := fl.Float64("max", 10000, "knee: highest rate")
	p95 := fl.Duration("p95", time.Second, "SLO: p95 latency bound")
	p99 := fl.Duration("p99", 0, "SLO: p99 latency bound (0 for none)")
	maxErr := fl.Float64("max-errors", 0.01, "SLO: bound on the failure rate (every outcome but ok: 4xx, 5xx, transport errors, timeouts, dropped arrivals)")
	poisson := fl.Bool("poisson", false, "Poisson arrivals instead of constant spacing")
	timeout := fl.Duration("timeout", 10*time.Second, "per-request timeout")
	hostCheck := fl.Bool("host-check", true, "judge the host: a breach while the hypervisor took over 10% of its cores (CPU steal) or other processes used over 25% is invalid (exit 3); false on a runner you know to be shared")
	conns := fl.Int("conns", 0, "maximum connections to the target (0: sized from the plan, the top rate × the slowest answer the SLO allows)")
	caFile := fl.String("ca", "", "PEM file of a CA to trust for https (e.g. the stack's Caddy CA)")
	insecure := fl.Bool("insecure", false, "skip TLS verification (loopback targets only)")
	allowRemote := fl.Bool("allow-remote", false, "allow a target that is not on loopback: you must own it")
	expectStatus := fl.String("expect-status", "", "status codes that count as success, comma-separated (default any 2xx; a 3xx redirect is never followed and fails unless listed)")
	expectBytes := fl.Int64("expect-bytes", 0, "the fewest body bytes a successful answer has (e.g. 1: an empty 200 fails)")
	seed := fl.Uint64("seed", 1, "random seed")
	out := fl.String("o", "", "write the result JSON here (and the Markdown and HTML reports beside it), from before the first request and after every step; the run before's files are kept as *.previous.*")
	shardFlag := fl.String("shard", "", "run as shard I of N generator processes (I from 0, e.g. 1/3): arrival i is sent by shard i mod N; merge the shards' results with headroom merge")
	startAt := fl.String("start-at", "", "shards: the common start instant, RFC 3339 (e.g. 2026-12-01T12:00:00Z), a little ahead")
	stepGap := fl.Duration("step-gap", 0, "shards: pause between a step's hold and the next ramp, for the step to drain (0 for the default 2s)")
	grpcMethod := fl.String("grpc", "", "call this gRPC method (package.Service/Method) instead of HTTP: -url grpc://host:port (grpcs:// over TLS), -body its request in protobuf JSON, described by -proto-set or else by the server's reflection; -conns bounds the calls in flight")
	protoSet := fl.String("proto-set", "", "gRPC: a descriptor set describing the method (protoc --include_imports --descriptor_set_out, buf build -o); without it the server's reflection is asked")
	engine := fl.String("engine", "auto", "how HTTP requests go out: loop (an event loop that wakes once for the arrivals due within -quantum: the least CPU per request; Linux, plain http://), pool (a goroutine per request in flight over a connection pool: https too), auto (loop where it can, else pool)")
	quantum := fl.Duration("quantum", httpc.DefaultQuantum, "event loop: the shortest interval between its wake-ups; the arrivals due within it go out together, up to that late (their latency still from the intended time): smaller is more punctual and costs more CPU; 0: a wake-up for every arrival")
	emit := fl.Bool("emit-result", false, "print the result (after every step, and at the end) on stdout between BEGIN/END HEADROOM RESULT lines, for headroom merge to read from logs (kubectl logs)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	sh, err := parseShard(*shardFlag, *startAt, *stepGap)
	if err != nil {
		return &exitError{exitUsage, err}
	}
	if *target == "" {
		return errors.New("-url is required, e.g. -url http://127.0.0.1:8080/healthz")
	}
	if err := checkLoopback(*target, *allowRemote, *grpcMethod != ""); err != nil {
		return err
	}
	var plan loadtest.Plan
	if *knee {
		plan = loadtest.Knee{Start: *start, Factor: *factor, Max: *maxRate, Ramp: *ramp, Hold: *hold}
	} else {
		var levels []float64
		for _, f := range strings.Split(*rates, ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil {
				return fmt.Errorf("-rates: %q is not a number; write e.g. -rates 50,100,200", f)
			}
			levels = append(levels, v)
		}
		plan = loadtest.Levels(*ramp, *hold, levels...)
	}
	if err := plan.Validate(); err != nil { // before any request, the preflight's too
		return &exitError{exitUsage, fmt.Errorf("%w (flags -rates, -ramp, -hold, -start, -factor, -max)", err)}
	}
	if *conns == 0 {
		*conns = poolFor(plan.MaxLevel(), max(*p95, *p99))
	}
	var pem []byte
	if *caFile != "" {
		if pem, err = os.ReadFile(*caFile); err != nil {
			return err
		}
	}
	var k cliKind
	if *grpcMethod != "" {
		if *expectStatus != "" || *expectBytes > 0 || len(headers) > 0 {
			return &exitError{exitUsage, errors.New("-expect-status, -expect-bytes and -header are HTTP's; a gRPC call succeeds on status OK")}
		}
		k, err = grpcKind(grpcFlags{target: *target, method: *grpcMethod, body: *body, protoSet: *protoSet,
			inFlight: *conns, timeout: *timeout, caPEM: pem, insecure: *insecure})
	} else {
		var expect httpc.Expect
		if expect, err = parseExpect(*expectStatus, *expectBytes); err != nil {
			return &exitError{exitUsage, err}
		}
		switch *engine {
		case "auto", "loop", "pool":
		default:
			return &exitError{exitUsage, fmt.Errorf("-engine %q: use loop, pool or auto", *engine)}
		}
		q := *quantum
		if q <= 0 {
			q = -1 // httpc's "none"
		}
		k, err = httpKind(httpc.Options{Timeout: *timeout, MaxConnsPerHost: *conns, InsecureSkipVerify: *insecure, RootCAPEM: pem, LoopAlone: processAlone, Quantum: q},
			*method, *target, headers, *body, expect, *engine)
	}
	if err != nil {
		return err
	}
	defer k.close()
	kind := k.name
	checks := cliChecks(kind, *p95, *p99, *maxErr)
	name := "headroom run " + *target
	params := map[string]string{"url": *target, "method": *method, "rates": *rates, "ramp": ramp.String(), "hold": hold.String(),
		"p95": p95.String(), "p99": p99.String(), "max-errors": strconv.FormatFloat(*maxErr, 'g', -1, 64), "conns": strconv.Itoa(*conns)}
	if *grpcMethod != "" {
		params["grpc"], params["method"] = *grpcMethod, "grpc"
		if *protoSet != "" {
			params["proto-set"] = *protoSet
		}
	}
	if !*hostCheck {
		params["host-check"] = "false"
	}
	if *expectStatus != "" {
		params["expect-status"] = *expectStatus
	}
	if *expectBytes > 0 {
		params["expect-bytes"] = strconv.FormatInt(*expectBytes, 10)
	}
	if *grpcMethod == "" {
		params["engine"] = "pool"
		if k.loop != nil {
			params["engine"], params["quantum"] = "loop", quantum.String()
		}
	}
	if sh.Count > 0 {
		params["shard"] = fmt.Sprintf("%d/%d", sh.Index, sh.Count)
	}
	of := outFile(*out)
	if err := of.claim(name, params); err != nil {
		return err
	}
	if err := k.preflight(); err != nil {
		of.fail(name, params, err)
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := loadtest.Run(ctx, loadtest.Scenario{
		Name:      name,
		Workload:  &loadtest.Arrivals{Poisson: *poisson, Mix: []loadtest.Kind{{Name: kind, Weight: 1, Do: k.do}}, Loop: k.loop},
		Plan:      plan,
		Checks:    checks,
		Seed:      *seed,
		Params:    params,
		System:    result.System{Backend: "external"},
		Logf:      func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) },
		Shard:     sh,
		OnStep:    keepStep(of, *emit, stdout),
		SelfCheck: selfCheck(*hostCheck),
	})
	if res == nil {
		return err
	}
	if werr := of.write(res); werr != nil {
		return werr
	}
	if *emit {
		if werr := emitResult(stdout, res); werr != nil {
			return werr
		}
	} else {
		fmt.Fprint(stdout, res.Markdown())
	}
	if err != nil {
		return &exitError{exitInvalid, fmt.Errorf("interrupted: %w (partial result kept)", err)}
	}
	if sh.Count > 0 {
		// A shard's own verdict judges a slice of the load: the verdict is
		// the merged result's. A shard that ran its plan succeeds, so that a
		// Kubernetes Job does not fail, and stop the other shards, over it.
		fmt.Fprintf(os.Stderr, "%s done (its own verdict %s is on a slice of the load; merge the shards' results with headroom merge for the run's)\n", sh, res.Verdict)
		return nil
	}
	return verdictError(res)
}

// poolFor returns the connections an open-model plan needs, from Little's
// law: its top rate times the slowest answer its SLO accepts (answers
// slower than that are a breach the checks report, not the pool's to
// hide), with a tenth to spare; at least httpc's default, and at most
// three quarters of the descriptors this process may open.
func poolFor(topRate float64, slowest time.Duration) int {
	n := max(int(math.Ceil(topRate*slowest.Seconds()*1.1)), httpc.DefaultMaxConnsPerHost)
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil && lim.Cur > 0 && lim.Cur < math.MaxInt32 {
		n = min(n, int(lim.Cur)*3/4)
	}
	return n
}

// preflight sends one request and fails fast, before any load, when nothing
// answers at the target: a refused or reset connection, a failed TLS
// handshake, a timeout. Any HTTP answer, an error status included, passes.
// cliKind is the one request kind a headroom run sends.
type cliKind struct {
	name      string
	do        func(context.Context) loadtest.Response
	loop      loadtest.EventLoop // nil: do on the arrivals' goroutines
	preflight func() error
	close     func()
}

// httpKind is the HTTP request of the run's flags.
// engine is the -engine flag: loop, pool or auto (loop where the request
// can go out on it).
func httpKind(opts httpc.Options, method, target string, headers []httpc.Header, body string, expect httpc.Expect, engine string) (cliKind, error) {
	client, err := httpc.New(opts)
	if err != nil {
		return cliKind{}, err
	}
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	req, err := client.Prepare(method, target, headers, b)
	if err != nil {
		client.Close()
		return cliKind{}, err
	}
	req = req.WithExpect(expect)
	k := cliKind{name: strings.ToLower(method), do: client.Func(req), close: client.Close,
		preflight: func() error { return preflight(client, req, target) }}
	if engine != "pool" {
		l, err := client.Loop(req)
		switch {
		case err == nil:
			k.loop = l
		case engine == "loop":
			client.Close()
			return cliKind{}, &exitError{exitUsage, fmt.Errorf("-engine loop: %w; use -engine pool", err)}
		}
	}
	return k, nil
}

func preflight(c *httpc.Client, req *httpc.Request, target string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := c.Do(ctx, req)
	switch r.Outcome {
	case loadtest.TransportError, loadtest.Timeout, loadtest.ProtocolError:
		return &exitError{exitUsage, fmt.Errorf("nothing answers at %s (%s: %v); start the service or fix -url", target, r.Outcome, r.Err)}
	}
	return nil
}

// checkLoopback refuses a target outside 127.0.0.0/8 and ::1 unless allowed.
func checkLoopback(raw string, allow, grpc bool) error {
	u, err := url.Parse(raw)
	switch {
	case grpc && (err != nil || u.Host == "" || u.Scheme != "grpc" && u.Scheme != "grpcs"):
		return fmt.Errorf("-url %q: with -grpc, give grpc://host:port (or grpcs://host:port over TLS)", raw)
	case !grpc && (err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https")):
		return fmt.Errorf("-url %q is not an absolute http(s) URL", raw)
	}
	if allow {
		return nil
	}
	host := u.Hostname()
	ips, err := net.LookupIP(host)
	if err != nil {
		return fmt.Errorf("-url: cannot resolve %q: %v", host, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("-url: %s resolves to %v, which is not loopback; load goes only to loopback unless you pass -allow-remote for a target you own", host, ip)
		}
	}
	return nil
}

// selfCheck is the run's self-check: the pool's knob named by its flag,
// the host judged unless -host-check=false.
func selfCheck(host bool) loadtest.SelfCheck {
	c := loadtest.SelfCheck{PoolKnob: "-conns"}
	if !host {
		c.MaxHostSteal, c.MaxHostOther = -1, -1
	}
	return c
}

// parseExpect reads -expect-status and -expect-bytes.
func parseExpect(status string, minBytes int64) (httpc.Expect, error) {
	e := httpc.Expect{MinBytes: minBytes}
	if minBytes < 0 {
		return e, fmt.Errorf("-expect-bytes %d: give 0 or more", minBytes)
	}
	for _, f := range strings.FieldsFunc(status, func(r rune) bool { return r == ',' || r == ' ' }) {
		code, err := strconv.Atoi(f)
		if err != nil || code < 100 || code > 599 {
			return e, fmt.Errorf("-expect-status: %q is not an HTTP status code; write e.g. -expect-status 200,204", f)
		}
		e.Status = append(e.Status, code)
	}
	return e, nil
}
