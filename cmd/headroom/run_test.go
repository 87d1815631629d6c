package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// The pool is sized from the plan: a server that stalls 200 ms every second
// holds 400 requests at 2,000/s, more than httpc's default 256 connections.
// headroom run measures it — latency from the intended send time, the
// step valid — and with a pool too small, the fix names the flag, -conns,
// not a Go option.
func TestRunSizesItsPool(t *testing.T) {
	if testing.Short() {
		t.Skip("4 s of load at 2,000/s")
	}
	t0 := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if phase := time.Since(t0) % time.Second; phase < 200*time.Millisecond {
			time.Sleep(200*time.Millisecond - phase)
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	args := []string{"-url", srv.URL, "-rates", "2000", "-ramp", "1s", "-hold", "3s", "-timeout", "5s"}
	var stdout bytes.Buffer
	err := runCmd(append(args, "-o", filepath.Join(dir, "sized.json")), &stdout)
	res, rerr := result.ReadResult(filepath.Join(dir, "sized.json"))
	require.NoError(t, rerr)
	assert.Equal(t, "2200", res.Params["conns"], "2,000/s × the 1 s p95 bound, a tenth to spare")
	s := res.Steps[0]
	assert.NotContains(t, strings.Join(s.Self.Reasons, "\n"), "connection pool", "the pool was large enough (%v)", err)
	if s.Verdict == result.Invalid {
		// The host, busy with other tests, may start requests late: the
		// step is void for that, and its latency is not this test's.
		t.Logf("the sized run's step is invalid for the host's reasons: %v", s.Self.Reasons)
	} else {
		// A fifth of the arrivals wait out the stall: p99 near 200 ms, p95 near 150.
		lat := s.Kind("get").Latency
		t.Logf("engine %s: p50 %v p95 %v p99 %v", res.Params["engine"], lat.P50, lat.P95, lat.P99)
		assert.InDelta(t, 195, float64(lat.P99)/1e6, 30)
	}

	stdout.Reset()
	_ = runCmd(append(args, "-conns", "32", "-o", filepath.Join(dir, "small.json")), &stdout)
	small, rerr := result.ReadResult(filepath.Join(dir, "small.json"))
	require.NoError(t, rerr)
	why := strings.Join(small.Steps[0].Self.Reasons, "\n")
	assert.Contains(t, why, "a client's connection pool is smaller than the load needs: raise -conns")
	assert.NotContains(t, why, "httpc.Options")
}

// A malformed plan is refused before any request, the preflight's too,
// and leaves -o as it was.
func TestRunRefusesABadPlanBeforeSending(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests.Add(1) }))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run.json")
	for _, bad := range [][]string{{"-rates", "-5"}, {"-hold", "0s"}, {"-ramp", "-1s"}, {"-knee", "-factor", "1"}} {
		var stdout bytes.Buffer
		err := runCmd(append([]string{"-url", srv.URL, "-o", out}, bad...), &stdout)
		require.Error(t, err, "%v", bad)
		t.Logf("%v: %v", bad, err)
		assert.Contains(t, err.Error(), "flags -rates", "%v: the error names the flags to fix", bad)
	}
	assert.Zero(t, requests.Load(), "requests sent for a malformed plan")
	assert.NoFileExists(t, out)
}
