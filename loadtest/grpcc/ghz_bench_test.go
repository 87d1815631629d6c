//go:build linux

package grpcc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// BenchmarkBesideGhz measures `headroom run -grpc` beside ghz
// (github.com/bojand/ghz, the Go community's gRPC load tool), one after the
// other in one run, against the same target at the same rate: a gRPC
// server in a process of its own (the health service's Check, with
// reflection, so that neither tool needs a .proto), pinned to the last
// core and each generator to the others. For each it reports the
// generator's CPU per call (user + system time of its process over the
// calls the server counted), the calls per second, and the p50/p95/p99
// each tool reports: ghz from when it sent a call, Headroom from when the
// open model meant to.
//
// Then the stall check: the same server freezing every call for the first
// 200 ms of each second, at 2,000 calls/s. A fifth of the arrivals land in
// a stall and wait out its rest, so the exact p99 from the intended send
// time is 190 ms (plus the call); a tool that measures from the send, and
// whose workers wait in the stall, reports less (coordinated omission).
//
// Knobs: HEADROOM_BENCH_RATE (calls/s, default 5000),
// HEADROOM_BENCH_DURATION (each run, default 8s), HEADROOM_GHZ (the ghz
// binary; default ghz on PATH or in GOPATH/bin: make bench-deps installs
// it from the module proxy).
//
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench BesideGhz -benchtime 1x ./loadtest/grpcc/
func BenchmarkBesideGhz(b *testing.B) {
	ghz := ghzBinary(b)
	rate := benchFloat(b, "HEADROOM_BENCH_RATE", 5000)
	dur := benchDuration(b, "HEADROOM_BENCH_DURATION", 8*time.Second)
	genCPUs, targetCPU := benchCPUs()
	headroom := buildHeadroom(b)
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-22s %9s %11s %9s %9s %9s %9s\n", "generator", "calls/s", "cpu µs/call", "p50", "p95", "p99", "×ghz cpu")
	for _, stall := range []bool{false, true} {
		r := rate
		if stall {
			r = 2000
		}
		srv := startGRPCChild(b, targetCPU, stall)
		var ghzCPU float64
		for _, gen := range []string{"ghz", "headroom"} {
			name := fmt.Sprintf("gen=%s/stall=%v", gen, stall)
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					out := filepath.Join(b.TempDir(), "out.json")
					var cmd *exec.Cmd
					if gen == "ghz" {
						// ghz keeps the rate with a limiter over a pool of
						// workers: as many as the rate holds at 50 ms a call
						// (the stall's callers block their workers).
						workers := max(50, int(r*0.05))
						cmd = exec.Command(ghz, "--insecure", "--call", "grpc.health.v1.Health/Check", "-d", `{"service":""}`,
							"--rps", strconv.Itoa(int(r)), "--duration", dur.String(), "--concurrency", strconv.Itoa(workers),
							"--connections", "1", "--format", "json", "--output", out, srv.addr)
					} else {
						cmd = exec.Command(headroom, "run", "-grpc", "grpc.health.v1.Health/Check", "-url", "grpc://"+srv.addr,
							"-body", `{"service":""}`, "-rates", strconv.Itoa(int(r)), "-ramp", "1s", "-hold", (dur - time.Second).String(),
							"-host-check=false", "-o", out)
					}
					if genCPUs != "" {
						cmd.Args = append([]string{"taskset", "-c", genCPUs, cmd.Path}, cmd.Args[1:]...)
						cmd.Path, _ = exec.LookPath("taskset")
					}
					n0 := srv.calls(b)
					start := time.Now()
					log, err := cmd.CombinedOutput()
					wall := time.Since(start)
					n := srv.calls(b) - n0
					if err != nil && gen == "ghz" {
						b.Fatalf("ghz: %v\n%s", err, log)
					}
					if n <= 0 {
						b.Fatalf("%s: the server counted no calls\n%s", gen, log)
					}
					cpu := float64(cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime()) / 1e3 / float64(n)
					var p50, p95, p99 time.Duration
					if gen == "ghz" {
						p50, p95, p99 = ghzPercentiles(b, out)
						ghzCPU = cpu
					} else {
						res, rerr := result.ReadResult(out)
						if rerr != nil {
							b.Fatalf("headroom run: %v\n%s", rerr, log)
						}
						l := res.Steps[0].Kind("Check").Latency
						p50, p95, p99 = l.P50, l.P95, l.P99
						if v := res.Steps[0].Verdict; v != result.Pass {
							b.Logf("headroom run: step %s: %v", v, res.Steps[0].Self.Reasons)
						}
					}
					b.ReportMetric(cpu, "cpu-µs/call")
					b.ReportMetric(float64(n)/wall.Seconds(), "calls/s")
					b.ReportMetric(float64(p99)/1e6, "p99-ms")
					x := "-"
					if gen != "ghz" && ghzCPU > 0 {
						b.ReportMetric(cpu/ghzCPU, "×ghz-cpu")
						x = fmt.Sprintf("%.2f", cpu/ghzCPU)
					}
					fmt.Fprintf(&table, "%-22s %9.0f %11.1f %9v %9v %9v %9s\n", name, float64(n)/wall.Seconds(), cpu,
						p50.Round(10*time.Microsecond), p95.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), x)
				}
			})
		}
	}
	fmt.Printf("\nBenchmarkBesideGhz: %.0f calls/s (the stall check at 2000/s; its exact p99 from the intended send is 190 ms plus the call)%s\n", rate, table.String())
}

// ghzPercentiles reads p50, p95 and p99 from ghz's JSON report.
func ghzPercentiles(b *testing.B, path string) (p50, p95, p99 time.Duration) {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var rep struct {
		LatencyDistribution []struct {
			Percentage int           `json:"percentage"`
			Latency    time.Duration `json:"latency"`
		} `json:"latencyDistribution"`
	}
	if err := json.Unmarshal(raw, &rep); err != nil {
		b.Fatalf("ghz's report: %v", err)
	}
	for _, d := range rep.LatencyDistribution {
		switch d.Percentage {
		case 50:
			p50 = d.Latency
		case 95:
			p95 = d.Latency
		case 99:
			p99 = d.Latency
		}
	}
	return p50, p95, p99
}

// ghzBinary finds ghz, or skips saying how to install it.
func ghzBinary(b *testing.B) string {
	if p := os.Getenv("HEADROOM_GHZ"); p != "" {
		return p
	}
	if p, err := exec.LookPath("ghz"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "ghz")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	b.Skip("ghz not found: run `make bench-deps` (go install github.com/bojand/ghz/cmd/ghz@v0.120.0) or set HEADROOM_GHZ")
	return ""
}

func benchFloat(b *testing.B, name string, def float64) float64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		b.Fatalf("%s=%q: give a positive number", name, v)
	}
	return f
}

func benchDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 3*time.Second {
		b.Fatalf("%s=%q: give a duration of at least 3s", name, v)
	}
	return d
}

// benchCPUs returns the generators' cores and the target's (taskset
// lists), empty on one core or without taskset.
func benchCPUs() (gen, target string) {
	n := runtime.NumCPU()
	if _, err := exec.LookPath("taskset"); err != nil || n < 2 {
		return "", ""
	}
	if n == 2 {
		return "0", "1"
	}
	return fmt.Sprintf("0-%d", n-2), strconv.Itoa(n - 1)
}

// buildHeadroom builds the headroom command.
func buildHeadroom(b *testing.B) string {
	bin := filepath.Join(b.TempDir(), "headroom")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/headroom-dev/headroom/cmd/headroom").CombinedOutput(); err != nil {
		b.Fatalf("go build cmd/headroom: %v\n%s", err, out)
	}
	return bin
}

// grpcChild is the benchmark's target: this test binary re-executed as a
// gRPC server (see TestMain), and the address of its call counter.
type grpcChild struct {
	addr, counter string
}

func (c grpcChild) calls(b *testing.B) int64 {
	resp, err := http.Get("http://" + c.counter)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var n int64
	if _, err := fmt.Fscan(resp.Body, &n); err != nil {
		b.Fatal(err)
	}
	return n
}

const childEnv = "HEADROOM_GRPC_CHILD"

// startGRPCChild starts the target, pinned to cpu when given; it stops
// with the benchmark (killed by its PID, and by itself when its stdin
// closes).
func startGRPCChild(b *testing.B, cpu string, stall bool) grpcChild {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	args := []string{exe, "-test.run=^$"}
	if cpu != "" {
		args = append([]string{"taskset", "-c", cpu}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+strconv.FormatBool(stall))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var c grpcChild
	if _, err := fmt.Fscan(bufio.NewReader(stdout), &c.addr, &c.counter); err != nil {
		b.Fatalf("the gRPC target: %v", err)
	}
	return c
}

// stallingHealth answers Check at once, or, stalling, only after the
// first 200 ms of each second.
type stallingHealth struct {
	healthpb.UnimplementedHealthServer
	stall bool
	t0    time.Time
	calls atomic.Int64
}

func (h *stallingHealth) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if h.stall {
		if phase := time.Since(h.t0) % time.Second; phase < 200*time.Millisecond {
			time.Sleep(200*time.Millisecond - phase)
		}
	}
	h.calls.Add(1)
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

// grpcChildMain serves the target and its counter when this process is
// the benchmark's child, and exits when its parent goes.
func grpcChildMain() {
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		return
	}
	h := &stallingHealth{stall: v == "true", t0: time.Now()}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, h)
	reflection.Register(srv)
	go func() { _ = srv.Serve(gl) }()
	go func() {
		_ = http.Serve(cl, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, h.calls.Load()) }))
	}()
	fmt.Println(gl.Addr().String(), cl.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}

func TestMain(m *testing.M) {
	grpcChildMain()
	os.Exit(m.Run())
}
