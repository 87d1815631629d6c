//go:build load

package scenarios

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/go-units"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/report"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// TestLoad_Replicas checks seed 000's sizing advice — "add pods: capacity
// is expected to scale roughly linearly with replicas (checked
// periodically, not every pass)" — by running the gateway knee search
// (TestLoad_GatewayKnee's workload and bar) on 1, 2 and 3 relay pods
// behind Caddy's round robin, on PostgreSQL (which more than one replica
// needs: events fan out to every replica through LISTEN/NOTIFY). The pods
// are small — 0.25 CPU / 48 MiB each unless LOADTEST_TARGET_CPUS /
// LOADTEST_TARGET_MEMORY say otherwise — so that three of them run out
// before this 2-core machine does; each count's search starts and ends at
// the knobs' START and MAX times its replicas. The table beside the runs
// (TestLoad_Replicas/scaling) gives each count's knee, its factor over one
// pod with the interval the searches' brackets allow, and a verdict; the
// test fails when a count surely holds under MIN_EFFICIENCY (0.8) of
// linear.
//
// Knobs: REPLICAS (1,2,3; -short 1,2), MIN_EFFICIENCY, and the knee's
// START (per replica; 600), FACTOR (1.5), MAX (per replica; 4000),
// PRECISION (0.1: brackets of ±10% tell linear from not), PROBES (7),
// RAMP (15s), HOLD (25s), GAP, SEED, UPSTREAM_CAP (20s), and the user
// model's (relayload.Model). -short probes 20 and 40 users a replica:
// every count's capacity is then a lower bound and the factor unknown,
// but the replicas, Caddy's spread and the table are exercised.
func TestLoad_Replicas(t *testing.T) {
	notDeployed(t, "starts its target with 1, 2 and 3 replicas")
	besideOthers(t)
	k := loadtest.NewKnobs(t)
	counts := replicaCounts(t, k.String("REPLICAS", "1,2,3", "1,2"))
	minEff := k.Float("MIN_EFFICIENCY", "0.8", "0.8", 0)
	plan := k.Knee(
		loadtest.Knee{Start: 600, Factor: 1.5, Max: 4000, Precision: 0.1, MaxProbes: 7, Ramp: 15 * time.Second, Hold: 25 * time.Second},
		loadtest.Knee{Start: 20, Factor: 2, Max: 40, Ramp: 2 * time.Second, Hold: 6 * time.Second})
	// A probe drains in 25 s, not the calibrated 55 s: calls over 20 s are
	// over the 15 s bar either way.
	pod := podSetup{cpus: "0.25", memory: "48MiB", upstreamCap: 20 * time.Second}
	if os.Getenv("LOADTEST_TARGET_CPUS") != "" {
		pod.cpus = ""
	}
	if os.Getenv("LOADTEST_TARGET_MEMORY") != "" {
		pod.memory = ""
	}

	runs := make([]*loadtest.Result, len(counts))
	for i, n := range counts {
		t.Run(fmt.Sprintf("replicas=%d", n), func(t *testing.T) {
			p := pod
			p.replicas = n
			scaled := plan
			scaled.Start, scaled.Max = plan.Start*float64(n), plan.Max*float64(n)
			p.plan = &scaled
			runs[i] = gatewayKnee(t, fixtures.Postgres, handshakeEra, p)
		})
	}
	var done []int
	var got []*loadtest.Result
	for i, r := range runs {
		if r != nil {
			done, got = append(done, counts[i]), append(got, r)
		}
	}
	if len(got) < 2 {
		t.Logf("replica scaling: %d of %d counts measured, too few to set side by side", len(got), len(counts))
		return
	}
	s, err := result.NewScaling(done, got, minEff)
	if err != nil {
		t.Fatal(err)
	}
	tb := report.Table{Title: "Capacity against replicas (seed 000: roughly linear)", Header: s.Header(), Rows: s.Rows()}
	var why []string
	for _, p := range s.Points[1:] {
		why = append(why, fmt.Sprintf("%d replicas: %s: %s.", p.Replicas, p.Verdict, p.Text))
	}
	sys := got[0].Environment.System
	shape := fmt.Sprintf("Each pod %g cores / %s.", sys.CPUs, units.BytesSize(float64(sys.Memory)))
	tb.Note = strings.Join(append([]string{note(got[0]), shape}, why...), " ")
	writeTable(t, "scaling", tb)
	if err := s.Err(); err != nil {
		t.Error(err)
	}
}

// replicaCounts parses REPLICAS: increasing counts of 1 or more, "1,2,3".
func replicaCounts(t *testing.T, v string) []int {
	t.Helper()
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(out) > 0 && n <= out[len(out)-1]) {
			t.Fatalf("knob REPLICAS=%q: give increasing replica counts of 1 or more, such as 1,2,3", v)
		}
		out = append(out, n)
	}
	if len(out) < 2 {
		t.Fatalf("knob REPLICAS=%q: give two counts or more to set side by side, such as 1,2,3", v)
	}
	return out
}
