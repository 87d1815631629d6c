package server

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// cpuSink keeps burnCPU's result alive so the loop is not optimised away.
var cpuSink atomic.Uint64

// Faults are injectable regressions, off when zero. The framework's own
// tests switch one on (RELAY_FAULT) to prove a scenario notices it.
type Faults struct {
	// CallLatency is added to every tools/call before it answers ("call-latency:5ms").
	CallLatency time.Duration
	// ListLatency is added to every tools/list ("list-latency:20ms").
	ListLatency time.Duration
	// CallCPU is CPU time burnt on every tools/call ("call-cpu:200us").
	CallCPU time.Duration
	// DashboardNPlusOne makes the dashboard query each tool separately
	// after listing the tools ("dashboard-n-plus-one").
	DashboardNPlusOne bool
	// AuthNoCache turns the token cache off: one query per request ("auth-no-cache").
	AuthNoCache bool
	// EventDelay holds every event this long before fan-out ("event-delay:50ms").
	EventDelay time.Duration
	// StreamMemory is extra memory in bytes kept per held stream ("stream-memory:16384").
	StreamMemory int64
	// StreamGoroutine holds each stream the plain net/http way, with its
	// goroutines and buffers, instead of hijacking it ("stream-goroutine").
	StreamGoroutine bool
	// CallLeak leaves a goroutine behind every tools/call, blocked for
	// good on a channel nobody sends on, holding this many bytes
	// ("call-leak:4096"): the forgotten-waiter leak a soak must catch.
	CallLeak int64
	// RecordAsync answers a tools/call before its usage is recorded and
	// records it in the background within this long, dropping the record
	// when the database does not answer in time ("record-async:500ms"):
	// the acknowledged-but-lost write a fault scenario's ledger must catch.
	RecordAsync time.Duration
	// NoReconnect connects to PostgreSQL only as the relay starts: its
	// pool's connections are dialled once, and one that breaks (the
	// database restarted, failed over, or cut off) is never replaced
	// ("db-no-reconnect"): the relay that does not recover after its
	// database came back, which a fault scenario's RecoversWithin must
	// catch.
	NoReconnect bool
}

// faultNames are the accepted names, for error messages.
const faultNames = "call-latency:DUR, list-latency:DUR, call-cpu:DUR, dashboard-n-plus-one, auth-no-cache, event-delay:DUR, stream-memory:BYTES, stream-goroutine, call-leak:BYTES, record-async:DUR, db-no-reconnect"

// ParseFaults parses a comma-separated list such as
// "call-latency:5ms,dashboard-n-plus-one". Empty items are ignored.
func ParseFaults(s string) (Faults, error) {
	var f Faults
	var errs []error
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, arg, hasArg := strings.Cut(item, ":")
		dur := func(dst *time.Duration) {
			d, err := time.ParseDuration(arg)
			if !hasArg || err != nil || d <= 0 {
				errs = append(errs, fmt.Errorf("fault %q: want %s:DURATION, e.g. %s:5ms", item, name, name))
				return
			}
			*dst = d
		}
		flag := func(dst *bool) {
			if hasArg {
				errs = append(errs, fmt.Errorf("fault %q: %s takes no argument", item, name))
				return
			}
			*dst = true
		}
		switch name {
		case "call-latency":
			dur(&f.CallLatency)
		case "list-latency":
			dur(&f.ListLatency)
		case "call-cpu":
			dur(&f.CallCPU)
		case "event-delay":
			dur(&f.EventDelay)
		case "record-async":
			dur(&f.RecordAsync)
		case "dashboard-n-plus-one":
			flag(&f.DashboardNPlusOne)
		case "auth-no-cache":
			flag(&f.AuthNoCache)
		case "stream-goroutine":
			flag(&f.StreamGoroutine)
		case "db-no-reconnect":
			flag(&f.NoReconnect)
		case "stream-memory", "call-leak":
			n, err := strconv.ParseInt(arg, 10, 64)
			if !hasArg || err != nil || n <= 0 || n > 1<<30 {
				errs = append(errs, fmt.Errorf("fault %q: want %s:BYTES, 1 to 1073741824", item, name))
				continue
			}
			if name == "call-leak" {
				f.CallLeak = n
			} else {
				f.StreamMemory = n
			}
		default:
			errs = append(errs, fmt.Errorf("unknown fault %q; known: %s", name, faultNames))
		}
	}
	return f, errors.Join(errs...)
}

// List returns the faults that are on, spelled as ParseFaults accepts them,
// in a fixed order; nil when none is on.
func (f Faults) List() []string {
	var out []string
	add := func(on bool, s string) {
		if on {
			out = append(out, s)
		}
	}
	add(f.CallLatency > 0, "call-latency:"+f.CallLatency.String())
	add(f.ListLatency > 0, "list-latency:"+f.ListLatency.String())
	add(f.CallCPU > 0, "call-cpu:"+f.CallCPU.String())
	add(f.DashboardNPlusOne, "dashboard-n-plus-one")
	add(f.AuthNoCache, "auth-no-cache")
	add(f.EventDelay > 0, "event-delay:"+f.EventDelay.String())
	add(f.StreamMemory > 0, "stream-memory:"+strconv.FormatInt(f.StreamMemory, 10))
	add(f.StreamGoroutine, "stream-goroutine")
	add(f.CallLeak > 0, "call-leak:"+strconv.FormatInt(f.CallLeak, 10))
	add(f.RecordAsync > 0, "record-async:"+f.RecordAsync.String())
	add(f.NoReconnect, "db-no-reconnect")
	return out
}

// String returns the faults as a comma-separated list, "" when none.
func (f Faults) String() string { return strings.Join(f.List(), ",") }

// burnCPU spins for d of wall time on this goroutine (the call-cpu fault).
func burnCPU(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	cpuSink.Store(x)
}

// leakForever is the call-leak fault: a goroutine holding n bytes, waiting
// on a channel nobody will ever send on.
func leakForever(n int64) {
	buf := make([]byte, n)
	for i := range buf {
		buf[i] = byte(i) // touched: resident, not a zero page
	}
	never := make(chan struct{})
	go func() {
		<-never
		cpuSink.Add(uint64(buf[0]))
	}()
}
