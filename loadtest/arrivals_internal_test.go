package loadtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
)

func TestNextArrival(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		r    rampState
		from time.Duration // after t0
		need float64
		want time.Duration // after t0; -1 for none
	}{
		// Steady 100/s: one arrival every 10 ms.
		{"steady", rampState{from: 100, to: 100, start: t0}, 0, 1, 10 * time.Millisecond},
		// Steady, two arrivals of work (a Poisson draw of 2).
		{"steady need=2", rampState{from: 100, to: 100, start: t0}, 0, 2, 20 * time.Millisecond},
		// Zero rate: no arrival until the level changes.
		{"zero", rampState{start: t0}, 0, 1, -1},
		// Ramp 0→100/s over 1 s: the integral is 50·t², so it reaches 1 at
		// t = sqrt(1/50) ≈ 141.42 ms.
		{"ramp from zero", rampState{from: 0, to: 100, start: t0, dur: time.Second}, 0, 1, 141421356},
		// Ramp 0→10/s over 1 s yields 5 arrivals; the 6th needs 0.1 s at 10/s
		// after the ramp ends.
		{"past the ramp", rampState{from: 0, to: 10, start: t0, dur: time.Second}, 0, 6, 1100 * time.Millisecond},
		// Ramp down 100→0 over 1 s: 50 arrivals in all, none after.
		{"ramp down runs dry", rampState{from: 100, to: 0, start: t0, dur: time.Second}, 0, 51, -1},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			got, ok := nextArrival(tc.r, t0.Add(tc.from), tc.need)
			if tc.want < 0 {
				if ok {
					t.Fatalf("got an arrival at %v, want none", got.Sub(t0))
				}
				return
			}
			if !ok {
				t.Fatal("got no arrival")
			}
			if d := got.Sub(t0) - tc.want; d < -time.Microsecond || d > time.Microsecond {
				t.Fatalf("arrival at %v, want %v", got.Sub(t0), tc.want)
			}
		})
	}
}

func BenchmarkRecorderEnd(b *testing.B) {
	r := NewRecorder("get")
	r.open()
	k := r.kind("get")
	resp := Response{Outcome: OK, Bytes: 100}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := time.Now()
		for pb.Next() {
			s := r.begin(k, now)
			r.end(s, resp, now.Add(1500*time.Microsecond))
		}
	})
}

func BenchmarkRecorderRecord(b *testing.B) {
	r := NewRecorder("fanout")
	r.open()
	resp := Response{Outcome: OK}
	b.ReportAllocs()
	for b.Loop() {
		r.Record("fanout", 3*time.Millisecond, resp)
	}
}

func TestRecorderZeroAllocs(t *testing.T) {
	r := NewRecorder("get")
	r.open()
	k := r.kind("get")
	now := time.Now()
	resp := Response{Outcome: HTTP5xx, Bytes: 10}
	allocs := testing.AllocsPerRun(1000, func() {
		r.end(r.begin(k, now), resp, now.Add(time.Millisecond))
		r.Record("get", time.Millisecond, resp)
	})
	if allocs != 0 {
		t.Fatalf("recording a sample allocates %v times; want 0", allocs)
	}
}

// An arrival that waited for a worker while MaxInFlight were busy is
// dropped once it is MaxWait late; one a worker was there for, started
// late because the generator's goroutines waited for a core, is sent (its
// latency still runs from the intended time): the drop would charge the
// generator's lateness to the target.
func TestArrivalsDropOnlyWhatWaitedForAWorker(t *testing.T) {
	for _, tc := range []struct {
		bounded bool
		want    Outcome
	}{
		{bounded: false, want: OK},
		{bounded: true, want: Dropped},
	} {
		t.Run(fmt.Sprintf("bounded=%v", tc.bounded), func(t *testing.T) {
			var sent atomic.Int64
			a := &Arrivals{MaxWait: 10 * time.Millisecond, Mix: []Kind{{Name: "get", Weight: 1, Do: func(context.Context) Response {
				sent.Add(1)
				return Response{Outcome: OK}
			}}}}
			rec := NewRecorder("get")
			w := rec.open()
			d := a.Start(t.Context(), rec, 1).(*arrivals)
			d.inflight.Add(1)
			d.run(d.ctx, &arrivalRand{pcg: rand.NewPCG(0, 0)}, job{span: rec.begin(rec.kind("get"), time.Now().Add(-time.Second)), bounded: tc.bounded})
			d.Stop()
			ks := w.stats(rec.kind("get"))
			if got := ks.counts[tc.want]; got != 1 {
				t.Fatalf("outcomes %v: want one %v", ks.counts, tc.want)
			}
			wantSent := int64(0)
			if tc.want == OK {
				wantSent = 1
			}
			if sent.Load() != wantSent {
				t.Fatalf("sent %d requests; want %d", sent.Load(), wantSent)
			}
			if lat := ks.h.Max(); tc.want == OK && lat < int64(time.Second/time.Microsecond) {
				t.Fatalf("latency %d µs: want it from the intended time, a second ago", lat)
			}
		})
	}
}
