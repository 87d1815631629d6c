package shard_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/shard"
)

// kindOf returns a kind result holding the samples (microseconds).
func kindOf(t *testing.T, name string, samples []int64, errs int64) *result.KindResult {
	t.Helper()
	h := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	for _, v := range samples {
		if err := h.RecordValue(v); err != nil {
			t.Fatal(err)
		}
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return &result.KindResult{Kind: name, Histogram: string(b), Bytes: 10 * int64(len(samples)),
		Outcomes: map[loadtest.Outcome]int64{loadtest.OK: int64(len(samples)) - errs, loadtest.HTTP5xx: errs}}
}

// shardResults returns n shard results of the steps, each shard's step
// holding the samples drawn for it, and every sample of each step.
func shardResults(t *testing.T, n int, start time.Time, steps ...loadtest.Step) ([]*loadtest.Result, [][]int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	all := make([][]int64, len(steps))
	var out []*loadtest.Result
	for k := range n {
		r := &loadtest.Result{Schema: result.SchemaVersion, Scenario: "s", Model: "arrivals", Seed: 3,
			Shard: &result.ShardInfo{Shard: result.Shard{Index: k, Count: n, StartAt: start}, Host: "h"}}
		at := start
		for i, st := range steps {
			var samples []int64
			for range int(st.Level*st.Hold.Seconds()) / n {
				samples = append(samples, int64(1000+rng.ExpFloat64()*5000*float64(k+1)))
			}
			all[i] = append(all[i], samples...)
			hold := at.Add(st.Ramp)
			secs := st.Hold.Seconds()
			r.Steps = append(r.Steps, &loadtest.StepResult{Index: i, Step: st, Start: hold.Add(time.Duration(k) * time.Millisecond), End: hold.Add(st.Hold),
				Unsettled: int64(k), Offered: float64(len(samples)) / secs, Achieved: float64(len(samples)) / secs, Throughput: float64(len(samples)-1) / secs,
				Kinds: []*result.KindResult{kindOf(t, "get", samples, 1)},
				Self: result.SelfCheckResult{ScheduleLagP99: time.Duration(k) * time.Millisecond, LateStarts: int64(k), CPU: 0.1,
					Trends: []result.Trend{{Kind: loadtest.AllRequests, Third: st.Hold / 3, First: 10, Last: int64(k), SumFirst2: 10, SumLast2: float64(k)}}},
				Resources: []result.SeriesSummary{{Component: "generator", Metric: "cpu", Mean: 0.1, Max: 0.2, Samples: 2}},
				Verdict:   result.Pass})
			at = hold.Add(st.Hold + 2*time.Second)
		}
		r.Verdict = result.Pass
		out = append(out, r)
	}
	return out, all
}

// TestMergeExact: the merged histogram is exactly the histogram of all the
// shards' samples together — every percentile equal — and counts and rates
// are the sums.
func TestMergeExact(t *testing.T) {
	steps := loadtest.Levels(time.Second, 10*time.Second, 100, 300).Steps
	res, all := shardResults(t, 3, time.Now(), steps...)
	checks := []loadtest.Check{loadtest.LatencyBelow("get", 95, time.Minute), loadtest.FailuresBelow("get", 0.5)}
	m, err := shard.Merge(loadtest.Scenario{Name: "merged", Checks: checks, Plan: loadtest.Ladder{Steps: steps}}, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Steps) != 2 || len(m.Shards) != 3 || m.Verdict != result.Pass {
		t.Fatalf("merged %d steps of %d shards, verdict %s: %+v", len(m.Steps), len(m.Shards), m.Verdict, m.Steps[0])
	}
	for i, st := range m.Steps {
		whole := kindOf(t, "get", all[i], 3)
		k := st.Kind("get")
		for _, p := range []float64{50, 90, 95, 99, 99.9, 100} {
			if got, want := k.Percentile(p), whole.Percentile(p); got != want {
				t.Errorf("step %d: merged p%v %v, of all samples %v", i+1, p, got, want)
			}
		}
		if k.Total() != int64(len(all[i])) || k.Outcomes[loadtest.HTTP5xx] != 3 || k.Bytes != 10*int64(len(all[i])) {
			t.Errorf("step %d: merged %d requests (%d 5xx, %d bytes), want %d (3 5xx)", i+1, k.Total(), k.Outcomes[loadtest.HTTP5xx], k.Bytes, len(all[i]))
		}
		if want := float64(len(all[i])) / 10; st.Offered < want-1e-9 || st.Offered > want+1e-9 {
			t.Errorf("step %d: merged offered %.2f/s, want %.2f/s", i+1, st.Offered, want)
		}
		if k.Latency.P99 != whole.Percentile(99) {
			t.Errorf("step %d: Latency.P99 %v, want %v", i+1, k.Latency.P99, whole.Percentile(99))
		}
		if st.Resource("generator[2]", "cpu") == nil || st.Self.ScheduleLagP99 != 2*time.Millisecond || st.Self.LateStarts != 3 {
			t.Errorf("step %d: the generator series per shard, the worst lag and every late start are not kept: %+v %+v", i+1, st.Resources, st.Self)
		}
		if st.Unsettled != 3 {
			t.Errorf("step %d: %d users still starting, want the shards' summed (0+1+2)", i+1, st.Unsettled)
		}
		// The shards' users are disjoint: their trends' counts and sums add.
		if tr := st.Self.Trends; len(tr) != 1 || tr[0].First != 30 || tr[0].Last != 3 || tr[0].SumLast2 != 3 {
			t.Errorf("step %d: trends %+v, want the shards' summed (30 and 3)", i+1, tr)
		}
	}
}

// TestMergeMissingShardStep: a shard that stopped during step 2 makes the
// merged step 2 invalid, saying so, never a silently lower rate.
func TestMergeMissingShardStep(t *testing.T) {
	steps := loadtest.Levels(time.Second, 10*time.Second, 100, 300).Steps
	res, _ := shardResults(t, 3, time.Now(), steps...)
	res[2].Steps, res[2].Partial = res[2].Steps[:1], true
	m, err := shard.Merge(loadtest.Scenario{Plan: loadtest.Ladder{Steps: steps}}, res)
	if err != nil {
		t.Fatal(err)
	}
	if m.Steps[0].Verdict != result.Pass {
		t.Errorf("step 1: %s, want pass: %v", m.Steps[0].Verdict, m.Steps[0].Self.Reasons)
	}
	s2 := m.Steps[1]
	if s2.Verdict != result.Invalid || len(s2.Self.Reasons) != 1 || !strings.Contains(s2.Self.Reasons[0], "shard 2 of 3 has no result for step 2: it stopped (killed?)") {
		t.Fatalf("step 2: %s %q, want invalid because shard 2 stopped", s2.Verdict, s2.Self.Reasons)
	}
	if m.Verdict == result.Pass {
		t.Errorf("merged verdict %s", m.Verdict)
	}
}

// TestMergeSkewAndGenerator: a shard whose hold began too far from the
// others', and a shard whose generator was the bottleneck, make the step
// invalid, each reason naming its shard.
func TestMergeSkewAndGenerator(t *testing.T) {
	steps := loadtest.Levels(0, 10*time.Second, 100).Steps
	res, _ := shardResults(t, 3, time.Now(), steps...)
	res[1].Steps[0].Start = res[1].Steps[0].Start.Add(300 * time.Millisecond)
	res[0].Steps[0].Self.Reasons = []string{"the generator used 95% of its 2 cores (bound 90%)"}
	res[0].Steps[0].Verdict = result.Invalid
	m, err := shard.Merge(loadtest.Scenario{Plan: loadtest.Ladder{Steps: steps}}, res)
	if err != nil {
		t.Fatal(err)
	}
	why := strings.Join(m.Steps[0].Self.Reasons, "\n")
	if m.Steps[0].Verdict != result.Invalid || !strings.Contains(why, "shard 0 of 3: the generator used 95%") || !strings.Contains(why, "up to 30") {
		t.Fatalf("step 1: %s, reasons:\n%s", m.Steps[0].Verdict, why)
	}
}

// TestMergeRefusesMismatch: results of different runs are not merged.
func TestMergeRefusesMismatch(t *testing.T) {
	steps := loadtest.Levels(0, time.Second, 100).Steps
	a, _ := shardResults(t, 2, time.Now(), steps...)
	b, _ := shardResults(t, 2, time.Now().Add(time.Minute), steps...)
	if _, err := shard.Merge(loadtest.Scenario{}, []*loadtest.Result{a[0], b[1]}); err == nil || !strings.Contains(err.Error(), "not the shards of one run") {
		t.Errorf("Merge of two runs' shards: %v", err)
	}
	if _, err := shard.Merge(loadtest.Scenario{}, []*loadtest.Result{a[0], a[0]}); err == nil || !strings.Contains(err.Error(), "two results of shard 0") {
		t.Errorf("Merge of one shard twice: %v", err)
	}
}
