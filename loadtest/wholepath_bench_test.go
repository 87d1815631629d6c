//go:build linux

package loadtest_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// BenchmarkWholePath measures the CPU the whole generator path spends per
// request, side by side in one run with wrk (Debian's wrk 4, an event loop
// in C: the bar) and with a naive net/http open-loop generator:
//
//   - gen=wrk:          wrk -t1 -c64, a closed loop as fast as it goes;
//   - gen=wrk-paced:     wrk with a delay before each request, its
//     connections sized to come near the rate the others keep;
//   - gen=arrivals:     loadtest.Run of an Arrivals workload at a fixed rate
//     over httpc's pool (Kind.Do on goroutines), as a scenario runs it
//     (self-checks, timeline, samplers);
//   - gen=loop:         the same on httpc's event loop (Arrivals.Loop);
//   - gen=headroom-run: the `headroom run` command at the same rate (on the
//     event loop, its default for plain http:// on Linux);
//   - gen=users:        loadtest.Run of modeled users (Users, one request
//     then a think time of 0.25–0.75 s) sized to give the same rate: the
//     closed model;
//   - gen=naive:        net/http with a goroutine per arrival at the same rate.
//
// The target is nginx (Debian's nginx-light) serving 1 KiB on loopback, in
// its own process. On a machine of two or more cores the target is pinned
// to the last core and every generator, each a process of its own, to the
// others, so that they do not take turns on a core; each generator's CPU is
// its process's user + system time (getrusage of the child) over its whole
// life, and its requests are those nginx counted meanwhile (stub_status).
// The metrics ×wrk and ×wrk-paced are a generator's CPU per request over
// wrk's in the same run, flat out and paced near the same rate: the goal
// for the Headroom paths is ≤ 1.25 at the same rate.
//
// Then gen=loop-top runs the event loop at fractions of wrk's flat-out
// rate (1, 0.9, 0.75, 0.6 of it), highest first, and reports the highest
// at which the step stays valid and on schedule (no drops, the rate held,
// every self-check passed) as top-valid×wrk: the goal is ≥ 0.75. With a
// target on one core, wrk's flat-out rate is the target's capacity as much
// as wrk's.
//
// A figure here is this machine's: the table's head gives what a system
// call and a thread's sleep and wake-up cost on it (a virtual machine's
// idle exits make the second dear), so that no figure is taken for
// another machine's.
//
// Knobs: HEADROOM_BENCH_RATE (arrivals/s, default 20000), HEADROOM_BENCH_DURATION
// (each generator's run, default 8s), HEADROOM_BENCH_PROFILE_DIR (write each
// Go generator's CPU profile there as <gen>.pprof).
//
//	make bench-deps   # installs wrk and nginx-light where missing (Debian)
//	flock /tmp/headroom-heavy.lock go test -run '^$' -bench WholePath -benchtime 1x ./loadtest/
func BenchmarkWholePath(b *testing.B) {
	wrk, errW := exec.LookPath("wrk")
	nginx, errN := exec.LookPath("nginx")
	if errN != nil {
		if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
			nginx, errN = "/usr/sbin/nginx", nil
		}
	}
	if errN != nil {
		b.Skip("nginx not found: the whole-path benchmark's target is Debian's nginx-light; run `make bench-deps` (apt-get install nginx-light wrk)")
	}
	rate := benchKnobFloat(b, "HEADROOM_BENCH_RATE", 20000)
	dur := benchKnobDuration(b, "HEADROOM_BENCH_DURATION", 8*time.Second)
	if dur < 3*time.Second {
		b.Fatalf("HEADROOM_BENCH_DURATION=%v: give at least 3s (1s of ramp, the rest held)", dur)
	}
	genCPUs, targetCPU := benchCPUs()
	tgt := startNginx(b, nginx, targetCPU)
	url := "http://" + tgt.addr + "/1k"
	profDir := os.Getenv("HEADROOM_BENCH_PROFILE_DIR")

	var headroomBin string
	var wrkPerReq, pacedPerReq float64
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-13s %9s %11s %9s %9s %6s %11s\n", "generator", "req/s", "cpu µs/req", "user", "sys", "×wrk", "×wrk-paced")
	ratio := func(x, base float64) string {
		if base <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", x/base)
	}
	gens := []struct {
		name string
		cmd  func(b *testing.B) *exec.Cmd
	}{
		{"wrk", func(b *testing.B) *exec.Cmd {
			if errW != nil {
				b.Skip("wrk not found: the bar of this benchmark is Debian's wrk; run `make bench-deps` (apt-get install wrk nginx-light)")
			}
			return exec.Command(wrk, "-t1", "-c64", fmt.Sprintf("-d%ds", int(dur.Seconds())), url)
		}},
		{"wrk-paced", func(b *testing.B) *exec.Cmd {
			if errW != nil {
				b.Skip("wrk not found: run `make bench-deps` (apt-get install wrk nginx-light)")
			}
			// wrk cannot keep a rate; paced by a delay before each request
			// on every connection, it comes near the others' rate, where a
			// request costs more than flat out (fewer answers per wake-up).
			script := filepath.Join(b.TempDir(), "pace.lua")
			if err := os.WriteFile(script, []byte("function delay()\n  return 3\nend\n"), 0o644); err != nil {
				b.Fatal(err)
			}
			conns := max(1, int(rate*wrkPacedCycle.Seconds()+0.5))
			return exec.Command(wrk, "-t1", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", int(dur.Seconds())), "-s", script, url)
		}},
		{"arrivals", benchChild("arrivals", url, rate, dur, profDir)},
		{"loop", benchChild("loop", url, rate, dur, profDir)},
		{"headroom-run", func(b *testing.B) *exec.Cmd {
			if headroomBin == "" {
				headroomBin = buildHeadroom(b)
			}
			return exec.Command(headroomBin, "run", "-url", url, "-rates", strconv.FormatFloat(rate, 'f', -1, 64),
				"-ramp", "1s", "-hold", (dur - time.Second).String())
		}},
		{"users", benchChild("users", url, rate, dur, profDir)},
		{"naive", benchChild("naive", url, rate, dur, profDir)},
	}
	var wrkRate float64
	for _, g := range gens {
		b.Run("gen="+g.name, func(b *testing.B) {
			for b.Loop() {
				cmd := g.cmd(b)
				if len(genCPUs) > 0 {
					cmd.Args = append([]string{"taskset", "-c", genCPUs, cmd.Path}, cmd.Args[1:]...)
					cmd.Path, _ = exec.LookPath("taskset")
				}
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				n0 := tgt.requests(b)
				start := time.Now()
				err := cmd.Run()
				wall := time.Since(start)
				n := tgt.requests(b) - n0 - 1               // the status request itself
				if err != nil && g.name != "headroom-run" { // an invalid run exits 3: its output says why
					b.Fatalf("%s: %v\n%s", g.name, err, out.String())
				}
				for _, line := range strings.Split(out.String(), "\n") {
					if strings.HasPrefix(line, "note: ") || strings.Contains(line, "is invalid") || strings.Contains(line, "Requests/sec") {
						b.Log(g.name + ": " + strings.TrimPrefix(line, "note: "))
					}
				}
				if n <= 0 {
					b.Fatalf("%s: nginx counted no requests\n%s", g.name, out.String())
				}
				u, s := cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()
				perReq := float64(u+s) / 1e3 / float64(n)
				b.ReportMetric(perReq, "cpu-µs/req")
				b.ReportMetric(float64(u)/1e3/float64(n), "user-µs/req")
				b.ReportMetric(float64(s)/1e3/float64(n), "sys-µs/req")
				b.ReportMetric(float64(n)/wall.Seconds(), "req/s")
				fmt.Fprintf(&table, "%-13s %9.0f %11.1f %9.1f %9.1f %6s %11s\n", g.name, float64(n)/wall.Seconds(), perReq,
					float64(u)/1e3/float64(n), float64(s)/1e3/float64(n), ratio(perReq, wrkPerReq), ratio(perReq, pacedPerReq))
				switch g.name {
				case "wrk":
					wrkPerReq, wrkRate = perReq, float64(n)/wall.Seconds()
				case "wrk-paced":
					pacedPerReq = perReq
					if wrkPerReq > 0 {
						b.ReportMetric(perReq/wrkPerReq, "×wrk")
					}
				default:
					if pacedPerReq > 0 {
						b.ReportMetric(perReq/pacedPerReq, "×wrk-paced")
					}
					if wrkPerReq > 0 {
						b.ReportMetric(perReq/wrkPerReq, "×wrk")
					}
				}
			}
		})
	}
	var top strings.Builder
	b.Run("gen=loop-top", func(b *testing.B) {
		if wrkRate <= 0 {
			b.Skip("wrk did not run: no flat-out rate to compare with")
		}
		for b.Loop() {
			best := 0.0
			for _, f := range []float64{1, 0.9, 0.75, 0.6} {
				cmd := benchChild("loop", url, f*wrkRate, dur, "")(b)
				if len(genCPUs) > 0 {
					cmd.Args = append([]string{"taskset", "-c", genCPUs, cmd.Path}, cmd.Args[1:]...)
					cmd.Path, _ = exec.LookPath("taskset")
				}
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("loop at %.0f/s: %v\n%s", f*wrkRate, err, out)
				}
				valid, why := benchStepValid(string(out))
				fmt.Fprintf(&top, "  loop at %.2f × wrk's %.0f/s: %s\n", f, wrkRate, why)
				if valid {
					best = f
					break
				}
			}
			b.ReportMetric(best, "top-valid×wrk")
			b.ReportMetric(best*wrkRate, "top-valid-req/s")
		}
	})
	call, wake := machineCosts()
	// Printed, not logged: a parent benchmark's log shows only with -v.
	fmt.Printf("\nBenchmarkWholePath: CPU per request of the whole path at %.0f/s (wrk flat out: as fast as it goes)\n"+
		"this machine (%d cores): a system call %.2f µs, a thread's 1 µs sleep and wake-up %.1f µs%s\ntop valid rate:\n%s",
		rate, runtime.NumCPU(), call, wake, table.String(), top.String())
}

// benchStepValid reads a benchmark generator's output: whether its step
// was valid and on schedule — no arrival dropped, the level held within
// 3%, no self-check failed — and the line that says so.
func benchStepValid(out string) (bool, string) {
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "bench: ") {
			continue
		}
		var level, held float64
		var verdict string
		var dropped int64
		if _, err := fmt.Sscanf(line, "bench: level=%g held=%g verdict=%s dropped=%d", &level, &held, &verdict, &dropped); err != nil {
			return false, "unreadable: " + line
		}
		ok := verdict != "invalid" && dropped == 0 && held >= 0.97*level
		return ok, strings.TrimPrefix(line, "bench: ")
	}
	return false, "no result line in the output:\n" + out
}

// machineCosts measures what a system call (getppid) and a thread's sleep
// of 1 µs and wake-up (nanosleep: the thread leaves the core and comes
// back) cost on this machine, in µs.
func machineCosts() (call, wake float64) {
	const calls, sleeps = 200_000, 2_000
	start := time.Now()
	for range calls {
		syscall.Getppid()
	}
	call = float64(time.Since(start).Microseconds()) / calls
	ts := syscall.Timespec{Nsec: 1000}
	start = time.Now()
	for range sleeps {
		_ = syscall.Nanosleep(&ts, nil)
	}
	wake = float64(time.Since(start).Microseconds()) / sleeps
	return call, wake
}

// wrkPacedCycle is a paced wrk connection's cycle: the 3 ms delay of its
// script as wrk's timers keep it, plus the answer (measured here: 80
// connections gave 18,000–19,000 requests/s).
const wrkPacedCycle = 4 * time.Millisecond

// benchCPUs returns the cores for the generators and the target's core
// (taskset lists), empty where the machine has one core or no taskset.
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

// benchChild returns a command that re-executes the test binary as the
// generator gen (see benchGenMain).
func benchChild(gen, url string, rate float64, dur time.Duration, profDir string) func(b *testing.B) *exec.Cmd {
	return func(b *testing.B) *exec.Cmd {
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), "HEADROOM_BENCH_GEN="+gen, "HEADROOM_BENCH_URL="+url,
			"HEADROOM_BENCH_RATE="+strconv.FormatFloat(rate, 'f', -1, 64), "HEADROOM_BENCH_DURATION="+dur.String(), "HEADROOM_BENCH_CPUPROFILE=")
		if profDir != "" {
			cmd.Env = append(cmd.Env, "HEADROOM_BENCH_CPUPROFILE="+filepath.Join(profDir, gen+".pprof"))
		}
		return cmd
	}
}

// buildHeadroom builds the headroom command for the benchmark.
func buildHeadroom(b *testing.B) string {
	goTool, err := exec.LookPath("go")
	if err != nil {
		b.Skip("go not on PATH: cannot build the headroom command")
	}
	bin := filepath.Join(b.TempDir(), "headroom")
	cmd := exec.Command(goTool, "build", "-o", bin, "github.com/headroom-dev/headroom/cmd/headroom")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build cmd/headroom: %v\n%s", err, out)
	}
	return bin
}

// benchTarget is an nginx serving /1k (1 KiB) and its request counter.
type benchTarget struct {
	addr string
}

// startNginx runs nginx in the foreground, one worker, on a free loopback
// port, pinned to cpu when given; it stops with the benchmark.
func startNginx(b *testing.B, nginx, cpu string) *benchTarget {
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "www"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "www", "1k"), bytes.Repeat([]byte("x"), 1024), 0o644); err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	user := ""
	if os.Getuid() == 0 {
		user = "user root;\n" // nginx as root would switch to nobody, who cannot read the temporary directory
	}
	conf := fmt.Sprintf(`%sdaemon off;
master_process off;
worker_processes 1;
error_log %[2]s/error.log;
pid %[2]s/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path %[2]s; proxy_temp_path %[2]s; fastcgi_temp_path %[2]s; uwsgi_temp_path %[2]s; scgi_temp_path %[2]s;
  server {
    listen %[3]s;
    root %[2]s/www;
    location = /status { stub_status; }
  }
}
`, user, dir, addr)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	args := []string{nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf")}
	if cpu != "" {
		args = append([]string{"taskset", "-c", cpu}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	t := &benchTarget{addr: addr}
	for i := 0; ; i++ {
		if _, err := t.count(); err == nil {
			return t
		} else if i == 50 {
			b.Fatalf("nginx did not answer on %s: %v\n%s", addr, err, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// requests returns the requests nginx has served so far.
func (t *benchTarget) requests(b *testing.B) int64 {
	n, err := t.count()
	if err != nil {
		b.Fatal(err)
	}
	return n
}

func (t *benchTarget) count() (int64, error) {
	resp, err := http.Get("http://" + t.addr + "/status")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Active connections: 1
	// server accepts handled requests
	//  1 1 1
	sc := bufio.NewScanner(resp.Body)
	for i := 0; sc.Scan(); i++ {
		if i == 2 {
			f := strings.Fields(sc.Text())
			if len(f) == 3 {
				return strconv.ParseInt(f[2], 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("nginx stub_status: unexpected answer (status %s)", resp.Status)
}

// benchGenMain runs this process as one generator of BenchmarkWholePath
// when HEADROOM_BENCH_GEN names one, and exits; otherwise it returns.
func benchGenMain() {
	gen := os.Getenv("HEADROOM_BENCH_GEN")
	if gen == "" {
		return
	}
	url := os.Getenv("HEADROOM_BENCH_URL")
	rate, _ := strconv.ParseFloat(os.Getenv("HEADROOM_BENCH_RATE"), 64)
	dur, _ := time.ParseDuration(os.Getenv("HEADROOM_BENCH_DURATION"))
	if url == "" || rate <= 0 || dur <= 0 {
		fmt.Fprintln(os.Stderr, "benchmark generator: HEADROOM_BENCH_URL, _RATE and _DURATION must be set")
		os.Exit(2)
	}
	if path := os.Getenv("HEADROOM_BENCH_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		defer func() {
			pprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	var err error
	switch gen {
	case "arrivals", "loop", "users":
		err = benchHeadroom(gen, url, rate, dur)
	case "naive":
		benchNaive(url, rate, dur)
	default:
		err = fmt.Errorf("benchmark generator %q: want arrivals, loop, users or naive", gen)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	pprof.StopCPUProfile()
	os.Exit(0)
}

// benchThink is the modeled users' mean think time: rate × think users
// give the rate (their requests' own latency is small beside it).
const benchThink = 500 * time.Millisecond

// benchHeadroom runs the open (arrivals) or closed (users) model through
// loadtest.Run against url: one second of ramp, the rest held.
func benchHeadroom(gen, url string, rate float64, dur time.Duration) error {
	// The generator's process serves nothing of its own.
	opts := httpc.Options{LoopAlone: true}
	if gen == "users" {
		// Thousands of users in a closed model: a burst of them waking at
		// once (after a collection's pause) must find connections, not
		// wait for the default 256.
		opts.MaxConnsPerHost = 1000
	}
	c, err := httpc.New(opts)
	if err != nil {
		return err
	}
	defer c.Close()
	req, err := c.Prepare("GET", url, nil, nil)
	if err != nil {
		return err
	}
	do := c.Func(req)
	var w loadtest.Workload
	level := rate
	switch gen {
	case "arrivals":
		w = &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: do}}}
	case "loop":
		l, err := c.Loop(req)
		if err != nil {
			return err
		}
		w = &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1}}, Loop: l}
	default:
		level = rate * benchThink.Seconds()
		w = &loadtest.Users{Kinds: []string{"get"}, Behavior: func(u *loadtest.User) {
			// Spread the first requests over one think time.
			if !u.Sleep(time.Duration(u.Rand.Int64N(int64(benchThink)))) {
				return
			}
			for {
				u.Do("get", do)
				// A think time that varies, as people's do: uniform over
				// ½–1½ of the mean.
				if !u.Sleep(benchThink/2 + time.Duration(u.Rand.Int64N(int64(benchThink)))) {
					return
				}
			}
		}}
	}
	res, err := loadtest.Run(context.Background(), loadtest.Scenario{
		Name:     "whole path " + gen,
		Workload: w,
		Plan:     loadtest.Levels(time.Second, dur-time.Second, level),
	})
	if err != nil {
		return err
	}
	s := res.Steps[0]
	fmt.Printf("note: level %.0f, %.0f req/s held, %s, generator CPU %.0f%%, schedule lag p99 %v, queued p99 %v, dropped %d %s\n",
		level, s.Throughput, s.Verdict, 100*s.Self.CPU, s.Self.ScheduleLagP99, s.Self.QueuedP99, s.Self.Dropped, strings.Join(s.Self.Reasons, "; "))
	fmt.Printf("bench: level=%g held=%g verdict=%s dropped=%d (generator CPU %.0f%%, schedule lag p99 %v) %s\n",
		level, s.Throughput, s.Verdict, s.Self.Dropped, 100*s.Self.CPU, s.Self.ScheduleLagP99, strings.Join(s.Self.Reasons, "; "))
	return nil
}

// benchNaive is the open loop a Go programmer writes first: net/http's
// client, a goroutine per arrival, sleeping until the next one is due.
// Bounded as the benchmark must be: at most 256 connections and 10,000
// arrivals in flight (the rest are counted as dropped), each request at
// most 10 s.
func benchNaive(url string, rate float64, dur time.Duration) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 256
	tr.MaxConnsPerHost = 256
	cl := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	gap := time.Duration(float64(time.Second) / rate)
	var wg sync.WaitGroup
	var inflight, dropped, failed atomic.Int64
	start := time.Now()
	end := start.Add(dur)
	next := start
	for next.Before(end) {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		for now := time.Now(); !next.After(now) && next.Before(end); next = next.Add(gap) {
			if inflight.Load() >= 10_000 {
				dropped.Add(1)
				continue
			}
			inflight.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer inflight.Add(-1)
				resp, err := cl.Get(url)
				if err != nil {
					failed.Add(1)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}()
		}
	}
	wg.Wait()
	tr.CloseIdleConnections()
	fmt.Printf("note: %d arrivals in %v, %d dropped (10,000 in flight), %d failed, all answered after %v\n",
		int(dur.Seconds()*rate), dur, dropped.Load(), failed.Load(), time.Since(start).Round(time.Millisecond))
}

func benchKnobFloat(b *testing.B, name string, def float64) float64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || !(v > 0) {
		b.Fatalf("%s=%q: give a positive number, e.g. %s=%g", name, s, name, def)
	}
	return v
}

func benchKnobDuration(b *testing.B, name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		b.Fatalf("%s=%q: give a positive duration, e.g. %s=%v", name, s, name, def)
	}
	return v
}
