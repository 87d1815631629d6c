package mockupstream

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Behavior is the upstream's behaviour model: how long each kind of request
// takes, how big answers are and which fraction of them fail, and how. It is
// JSON-serialisable (POST /admin/behavior replaces it whole, GET returns it);
// durations are written as Go duration strings ("1.2s") and read either that
// way or as a number of milliseconds. The zero Behavior answers every request
// at once, successfully, with empty tool text and no tools.
type Behavior struct {
	// Seed makes the draws deterministic: the n-th request served after
	// the behaviour is set draws the same latency, size and outcome for
	// the same seed. 0 asks the server to pick a random seed, which GET
	// /admin/behavior then reports.
	Seed uint64 `json:"seed"`
	// ToolCount is the number of tools tools/list returns (0–10000).
	ToolCount int `json:"tool_count"`
	// Initialize is the latency of "initialize".
	Initialize Latency `json:"initialize"`
	// List is the latency of "tools/list".
	List Latency `json:"list"`
	// Call is the latency of "tools/call" and of /echo.
	Call Latency `json:"call"`
	// ToolErrors is the fraction (0–1) of tools/call answered with
	// result.isError true.
	ToolErrors float64 `json:"tool_errors"`
	// Sizes is the mix of tools/call text sizes and /echo body sizes;
	// empty means empty text.
	Sizes []Size `json:"sizes"`
	// Faults are the injected transport and HTTP failures.
	Faults Faults `json:"faults"`
}

// Latency is the delay between reading a request and answering it. With P95
// zero it is Median ± Jitter, uniform; with P95 set it is log-normal with
// that median and 95th percentile. Cap, when non-zero, is the largest
// latency ever produced.
type Latency struct {
	// Median is the middle latency (the fixed value when P95 is zero).
	Median Duration `json:"median"`
	// Jitter spreads a fixed latency uniformly over Median ± Jitter
	// (never below zero). Exclusive with P95.
	Jitter Duration `json:"jitter,omitempty"`
	// P95 makes the latency log-normal with 5% of draws above P95; it
	// must be >= Median.
	P95 Duration `json:"p95,omitempty"`
	// Cap truncates the latency: no draw exceeds it. 0 for none; with
	// P95 set it must be >= P95.
	Cap Duration `json:"cap,omitempty"`
}

// Size is one band of the response size mix: with relative weight Weight,
// Bytes ± Jitter bytes, uniform.
type Size struct {
	// Weight is the band's relative weight (>= 0; the weights need not
	// sum to 1).
	Weight float64 `json:"weight"`
	// Bytes is the band's central size in bytes (0–64 MiB).
	Bytes int64 `json:"bytes"`
	// Jitter spreads sizes uniformly over Bytes ± Jitter bytes.
	Jitter int64 `json:"jitter,omitempty"`
}

// Faults are the injected failures. Each is a fraction (0–1) of requests;
// together with Behavior.ToolErrors they are the weights of one draw per
// request, so they must sum to at most 1 and the rest are answered
// normally. A fault happens when the drawn latency has passed, except a
// hang, which ignores the latency.
type Faults struct {
	// HTTP5xx is the fraction answered with HTTP status Status.
	HTTP5xx float64 `json:"http_5xx"`
	// Status is the 5xx status code of HTTP5xx answers; 0 means 503.
	Status int `json:"status,omitempty"`
	// Reset is the fraction whose connection is reset (RST) instead of
	// answered.
	Reset float64 `json:"reset"`
	// Hang is the fraction never answered: held until the client gives up
	// or MaxHang passes, then closed.
	Hang float64 `json:"hang"`
	// MaxHang bounds a hang; 0 means 2 minutes.
	MaxHang Duration `json:"max_hang,omitempty"`
	// SlowHeaders is the fraction whose answer's headers are held
	// HeaderDelay longer than the drawn latency.
	SlowHeaders float64 `json:"slow_headers"`
	// HeaderDelay is the extra delay of a slow-headers answer; it must be
	// > 0 when SlowHeaders is.
	HeaderDelay Duration `json:"header_delay,omitempty"`
}

// The limits Validate enforces and the defaults it fills in.
const (
	// MaxBytes is the largest response size a Size may give: 64 MiB.
	MaxBytes = 64 << 20
	// MaxToolCount is the largest ToolCount.
	MaxToolCount = 10000
	// MaxLatency is the largest latency, cap, jitter or delay accepted: 1 h.
	MaxLatency = time.Hour
	// DefaultMaxHang is the bound on a hang when Faults.MaxHang is zero.
	DefaultMaxHang = 2 * time.Minute
	// DefaultStatus is the status of an HTTP5xx answer when Faults.Status
	// is zero.
	DefaultStatus = 503
)

// FieldError is a problem with one field of a [Behavior]; Field is the JSON
// path of the field ("call.p95", "sizes[1].weight", "faults.reset").
type FieldError struct {
	// Field is the JSON path of the field.
	Field string
	// Problem says what is wrong and what to give instead.
	Problem string
}

// Error returns "field: problem".
func (e *FieldError) Error() string { return e.Field + ": " + e.Problem }

// Envelope returns the published connector envelope: 20 tools, listings
// 250 ms ± 100 ms, calls 1 s ± 500 ms, 1 KiB answers, no errors. It is the
// model the command starts with when no variable changes it.
func Envelope() Behavior {
	return Behavior{
		ToolCount: 20,
		List:      Latency{Median: Duration(250 * time.Millisecond), Jitter: Duration(100 * time.Millisecond)},
		Call:      Latency{Median: Duration(time.Second), Jitter: Duration(500 * time.Millisecond)},
		Sizes:     []Size{{Weight: 1, Bytes: 1024}},
	}
}

// Calibrated returns the calibrated workload measured in production: calls
// log-normal with median 1.2 s and p95 12 s capped at 50 s, 8% tool errors,
// answers of 4 KiB ± 2 KiB with 2% around 1 MiB (± 64 KiB), and the
// envelope's 20 tools and listing latency.
func Calibrated() Behavior {
	b := Envelope()
	b.Call = Latency{Median: Duration(1200 * time.Millisecond), P95: Duration(12 * time.Second), Cap: Duration(50 * time.Second)}
	b.ToolErrors = 0.08
	b.Sizes = []Size{{Weight: 0.98, Bytes: 4 << 10, Jitter: 2 << 10}, {Weight: 0.02, Bytes: 1 << 20, Jitter: 64 << 10}}
	return b
}

// Validate reports every problem in b, each a *[FieldError], joined.
func (b Behavior) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}
	if b.ToolCount < 0 || b.ToolCount > MaxToolCount {
		bad("tool_count", "%d is outside [0, %d]", b.ToolCount, MaxToolCount)
	}
	for _, l := range []struct {
		name string
		l    Latency
	}{{"initialize", b.Initialize}, {"list", b.List}, {"call", b.Call}} {
		l.l.validate(l.name, bad)
	}
	fraction := func(field string, v float64) {
		if !(v >= 0 && v <= 1) { // also rejects NaN
			bad(field, "fraction %v is outside [0, 1]", v)
		}
	}
	fraction("tool_errors", b.ToolErrors)
	fraction("faults.http_5xx", b.Faults.HTTP5xx)
	fraction("faults.reset", b.Faults.Reset)
	fraction("faults.hang", b.Faults.Hang)
	fraction("faults.slow_headers", b.Faults.SlowHeaders)
	if sum := b.ToolErrors + b.Faults.HTTP5xx + b.Faults.Reset + b.Faults.Hang + b.Faults.SlowHeaders; sum > 1+1e-9 {
		bad("faults", "tool_errors + http_5xx + reset + hang + slow_headers = %v exceeds 1; lower some fractions", sum)
	}
	if s := b.Faults.Status; s != 0 && (s < 500 || s > 599) {
		bad("faults.status", "%d is not a 5xx status; give 500–599 or 0 for 503", s)
	}
	durationRange("faults.max_hang", b.Faults.MaxHang, bad)
	durationRange("faults.header_delay", b.Faults.HeaderDelay, bad)
	if b.Faults.SlowHeaders > 0 && b.Faults.HeaderDelay <= 0 {
		bad("faults.header_delay", "must be > 0 when faults.slow_headers is %v", b.Faults.SlowHeaders)
	}
	positive := false
	for i, s := range b.Sizes {
		f := fmt.Sprintf("sizes[%d]", i)
		if !(s.Weight >= 0) || math.IsInf(s.Weight, 0) {
			bad(f+".weight", "%v must be finite and >= 0", s.Weight)
		}
		positive = positive || s.Weight > 0
		if s.Bytes < 0 || s.Bytes > MaxBytes {
			bad(f+".bytes", "%d is outside [0, %d]", s.Bytes, MaxBytes)
		}
		if s.Jitter < 0 || s.Jitter > MaxBytes {
			bad(f+".jitter", "%d is outside [0, %d]", s.Jitter, MaxBytes)
		}
	}
	if len(b.Sizes) > 0 && !positive {
		bad("sizes", "no size has a weight > 0; give one a positive weight or leave sizes empty")
	}
	return errors.Join(errs...)
}

func (l Latency) validate(name string, bad func(field, format string, args ...any)) {
	durationRange(name+".median", l.Median, bad)
	durationRange(name+".jitter", l.Jitter, bad)
	durationRange(name+".p95", l.P95, bad)
	durationRange(name+".cap", l.Cap, bad)
	if l.P95 == 0 {
		return
	}
	if l.Jitter != 0 {
		bad(name+".jitter", "jitter is for a fixed latency and p95 for a log-normal one; set only one")
	}
	if l.Median <= 0 {
		bad(name+".median", "must be > 0 when %s.p95 is set", name)
	}
	if l.P95 < l.Median {
		bad(name+".p95", "%v is below %s.median %v; give p95 >= median", l.P95, name, l.Median)
	}
	if l.Cap != 0 && l.Cap < l.P95 {
		bad(name+".cap", "%v is below %s.p95 %v; raise the cap or set it to 0 for none", l.Cap, name, l.P95)
	}
}

func durationRange(field string, d Duration, bad func(field, format string, args ...any)) {
	if d < 0 {
		bad(field, "%v is negative; give a duration >= 0", d)
	} else if d.D() > MaxLatency {
		bad(field, "%v exceeds %v", d, MaxLatency)
	}
}

// withDefaults returns b with the documented defaults filled in: Status 503
// and MaxHang 2 minutes when zero.
func (b Behavior) withDefaults() Behavior {
	if b.Faults.Status == 0 {
		b.Faults.Status = DefaultStatus
	}
	if b.Faults.MaxHang == 0 {
		b.Faults.MaxHang = Duration(DefaultMaxHang)
	}
	return b
}
