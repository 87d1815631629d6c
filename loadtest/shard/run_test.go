package shard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/shard"
)

// get returns a request function of the server's root.
func get(url string) func(ctx context.Context) loadtest.Response {
	return func(ctx context.Context) loadtest.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return loadtest.Response{Outcome: loadtest.TransportError, Err: err}
		}
		resp.Body.Close()
		return loadtest.Response{Outcome: loadtest.OK}
	}
}

// runShards runs the scenario made by mk as n shards in this process, at
// once, and merges them.
func runShards(t *testing.T, n int, mk func() loadtest.Scenario) *loadtest.Result {
	t.Helper()
	start := time.Now().Add(300 * time.Millisecond)
	results := make([]*loadtest.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s := mk()
			s.Shard = result.Shard{Index: i, Count: n, StartAt: start, Gap: 300 * time.Millisecond}
			res, err := loadtest.Run(context.Background(), s)
			if err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
			results[i] = res
		})
	}
	wg.Wait()
	m, err := shard.Merge(mk(), results)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestRunShardsInProcess runs both workloads through loadtest.Run as 3
// shards and as one process and compares the merged steps: the arrivals'
// counts to a few at the hold's edges, the users' requests within 10%.
func TestRunShardsInProcess(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Millisecond)
	}))
	defer srv.Close()
	plan := loadtest.Levels(300*time.Millisecond, 1500*time.Millisecond, 100, 200)
	for _, tc := range []struct {
		name  string
		w     loadtest.Workload
		slack func(single int64) float64
	}{
		{"arrivals", &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "get", Weight: 1, Do: get(srv.URL)}}},
			func(int64) float64 { return 6 }},
		{"users", &loadtest.Users{Kinds: []string{"get"}, Behavior: func(u *loadtest.User) {
			for u.Sleep(20*time.Millisecond) && u.Do("get", get(srv.URL)).Outcome == loadtest.OK {
			}
		}}, func(single int64) float64 { return 0.1 * float64(single) }},
	} {
		t.Run("workload="+tc.name, func(t *testing.T) {
			mk := func() loadtest.Scenario {
				lv := plan
				if tc.name == "users" {
					lv = loadtest.Levels(300*time.Millisecond, 1500*time.Millisecond, 2, 5)
				}
				return loadtest.Scenario{Name: tc.name, Workload: tc.w, Plan: lv, Seed: 5, Drain: time.Second,
					Checks: []loadtest.Check{loadtest.FailuresBelow("get", 0.01)}, SelfCheck: loadtest.SelfCheck{MaxCPU: -1}}
			}
			single, err := loadtest.Run(context.Background(), mk())
			if err != nil {
				t.Fatal(err)
			}
			merged := runShards(t, 3, mk)
			if len(merged.Steps) != len(single.Steps) {
				t.Fatalf("merged %d steps, single %d", len(merged.Steps), len(single.Steps))
			}
			for i, s := range single.Steps {
				m := merged.Steps[i]
				a, b := s.Kind("get").Total(), m.Kind("get").Total()
				t.Logf("step %d: single %d requests (%.1f/s, p50 %v, %s), merged %d (%.1f/s, p50 %v, %s) %q",
					i+1, a, s.Offered, s.Kind("get").Latency.P50, s.Verdict, b, m.Offered, m.Kind("get").Latency.P50, m.Verdict, m.Self.Reasons)
				if d := float64(a - b); d > tc.slack(a) || -d > tc.slack(a) {
					t.Errorf("step %d: single %d requests, merged %d", i+1, a, b)
				}
			}
		})
	}
}
