package loadtest

import (
	"context"
	"testing"
	"time"
)

// A user the generator woke late makes the lateness up at its next think
// time, so that it keeps its own pace; the lateness counts as schedule lag.
func TestUserSleepMakesUpTheGeneratorsLateness(t *testing.T) {
	rec := NewRecorder("get")
	w := rec.open()
	d := &users{env: runEnv{rec: rec}}
	u := &User{ctx: context.Background(), d: d}

	// Behind by 10 s, a 4 s think time is not waited at all: the user is
	// still 6 s behind, and that is this wake-up's lag.
	u.late = 10 * time.Second
	start := time.Now()
	if !u.Sleep(4 * time.Second) {
		t.Fatal("Sleep reported the user stopping")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Sleep(4s) 10 s behind waited %v; want no wait", took)
	}
	if u.late < 6*time.Second || u.late > 7*time.Second {
		t.Fatalf("late = %v after the think time; want 6 s (10 s behind − 4 s)", u.late)
	}
	if got := time.Duration(w.lag.Max()) * time.Microsecond; got < 6*time.Second {
		t.Fatalf("lag recorded up to %v; want the 6 s still behind", got)
	}

	// Behind by 6 s, a 6.05 s think time waits 50 ms, and the user is back
	// on its pace (late is that wake-up's own lag, small here).
	start = time.Now()
	if !u.Sleep(6*time.Second + 50*time.Millisecond) {
		t.Fatal("Sleep reported the user stopping")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("Sleep(6.05s) 6 s behind waited %v; want about 50 ms", took)
	}
	if took := time.Since(start); took < 40*time.Millisecond {
		t.Fatalf("Sleep(6.05s) 6 s behind waited %v; want about 50 ms", took)
	}
	if u.late > 2*time.Second {
		t.Fatalf("late = %v after an on-time wake-up; want its own small lag", u.late)
	}
}

// A modeled user's cycle — a request through Do, then a think time —
// allocates nothing, like an arrival's: ten thousand users must not feed
// the collector.
func TestUserCycleZeroAllocs(t *testing.T) {
	rec := NewRecorder("get")
	rec.open()
	u := &User{ctx: context.Background(), d: &users{env: runEnv{rec: rec}}}
	do := func(context.Context) Response { return Response{Outcome: OK, Bytes: 10} }
	allocs := testing.AllocsPerRun(200, func() {
		u.Do("get", do)
		u.late = 0 // on its pace: the think time waits on the timer
		u.Sleep(100 * time.Microsecond)
	})
	if allocs != 0 {
		t.Fatalf("a user's request and think time allocate %v times; want 0", allocs)
	}
}
