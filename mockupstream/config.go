package mockupstream

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"time"
)

// AuthMode says what the upstream asks of callers of its MCP and /echo
// endpoints.
type AuthMode string

// The auth modes.
const (
	// AuthNone accepts every request.
	AuthNone AuthMode = "none"
	// AuthBearer asks for "Authorization: Bearer <token>": any non-empty
	// token, or exactly Config.Token when it is set.
	AuthBearer AuthMode = "bearer"
)

// HoldMode says how a call is held while its latency passes.
type HoldMode string

// The hold modes.
const (
	// HoldPark hijacks the connection and waits in a 2 KiB goroutine, then
	// hands the connection back to the http.Server: about 4–6 KiB per held
	// call instead of about 21–27 KiB (BenchmarkHeldCall), for about 20%
	// more CPU per completed call (BenchmarkCompletedCall). It applies to
	// connections the Server accepts itself; through another server's
	// handler it falls back to HoldSleep.
	HoldPark HoldMode = "park"
	// HoldSleep waits in the net/http handler, as a plain Go server would.
	HoldSleep HoldMode = "sleep"
)

// Config configures a Server. The zero value serves the zero Behavior on
// :8765 with no auth, parking held calls.
type Config struct {
	// Addr is the listen address, such as ":8765" or "127.0.0.1:0";
	// default ":8765". Used by the command and Start, not by Serve.
	Addr string
	// Auth is the auth mode; "" means AuthNone.
	Auth AuthMode
	// Token is the bearer token AuthBearer asks for; empty accepts any.
	Token string
	// AdminToken, when set, is the bearer token the /admin endpoints ask
	// for (401 without it), so that only the test that started the server
	// changes its behaviour mid-run; empty leaves them open. The command
	// (ConfigFromEnv) reads ADMIN_TOKEN and, without it, closes them.
	AdminToken string
	// LogRequests logs one line per request ended.
	LogRequests bool
	// Logger receives the server's logs; nil means slog.Default().
	Logger *slog.Logger
	// Hold is the hold mode; "" means HoldPark.
	Hold HoldMode
	// Behavior is the behaviour the server starts with (and Reset
	// restores).
	Behavior Behavior
}

// DefaultPort is the port the command listens on when PORT is unset.
const DefaultPort = 8765

func (c Config) withDefaults() (Config, error) {
	if c.Addr == "" {
		c.Addr = ":" + strconv.Itoa(DefaultPort)
	}
	switch c.Auth {
	case "":
		c.Auth = AuthNone
	case AuthNone, AuthBearer:
	default:
		return c, fmt.Errorf("auth mode %q: give %q or %q", c.Auth, AuthNone, AuthBearer)
	}
	switch c.Hold {
	case "":
		c.Hold = HoldPark
	case HoldPark, HoldSleep:
	default:
		return c, fmt.Errorf("hold mode %q: give %q or %q", c.Hold, HoldPark, HoldSleep)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// Models are the presets MODEL selects, by name.
var Models = map[string]func() Behavior{
	"envelope":   Envelope,
	"calibrated": Calibrated,
}

// envVar maps a Behavior field (as FieldError names it) to the variable
// that sets it, so a cross-field problem names the variable.
var envVar = map[string]string{
	"tool_count":          "TOOL_COUNT",
	"list.median":         "LIST_LATENCY_MS",
	"list.jitter":         "LIST_JITTER_MS",
	"list.p95":            "LIST_P95_MS",
	"list.cap":            "LIST_CAP_MS",
	"call.median":         "CALL_LATENCY_MS",
	"call.jitter":         "CALL_JITTER_MS",
	"call.p95":            "CALL_P95_MS",
	"call.cap":            "CALL_CAP_MS",
	"tool_errors":         "TOOL_ERROR_FRACTION",
	"sizes[0].bytes":      "RESPONSE_BYTES",
	"sizes[0].jitter":     "RESPONSE_JITTER_BYTES",
	"sizes[0].weight":     "LARGE_RESPONSE_FRACTION",
	"sizes[1].weight":     "LARGE_RESPONSE_FRACTION",
	"sizes[1].bytes":      "LARGE_RESPONSE_BYTES",
	"faults":              "TOOL_ERROR_FRACTION + HTTP_5XX_FRACTION + RESET_FRACTION + HANG_FRACTION + SLOW_HEADERS_FRACTION",
	"faults.http_5xx":     "HTTP_5XX_FRACTION",
	"faults.status":       "HTTP_5XX_STATUS",
	"faults.reset":        "RESET_FRACTION",
	"faults.hang":         "HANG_FRACTION",
	"faults.max_hang":     "MAX_HANG_MS",
	"faults.slow_headers": "SLOW_HEADERS_FRACTION",
	"faults.header_delay": "SLOW_HEADERS_MS",
}

// modelVars are the variables that change the behaviour model; BEHAVIOR
// excludes them.
var modelVars = []string{
	"MODEL", "SEED", "TOOL_COUNT",
	"LIST_LATENCY_MS", "LIST_JITTER_MS", "LIST_P95_MS", "LIST_CAP_MS",
	"CALL_LATENCY_MS", "CALL_JITTER_MS", "CALL_P95_MS", "CALL_CAP_MS",
	"TOOL_ERROR_FRACTION", "RESPONSE_BYTES", "RESPONSE_JITTER_BYTES",
	"LARGE_RESPONSE_FRACTION", "LARGE_RESPONSE_BYTES",
	"HTTP_5XX_FRACTION", "HTTP_5XX_STATUS", "RESET_FRACTION", "HANG_FRACTION",
	"MAX_HANG_MS", "SLOW_HEADERS_FRACTION", "SLOW_HEADERS_MS",
}

// ConfigFromEnv reads the configuration from environment variables through
// getenv (os.Getenv in the command); the package documentation lists them.
// An error names the variable and what to give instead.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	e := &envReader{getenv: getenv}
	var c Config

	host := getenv("HOST")
	port := DefaultPort
	if v := getenv("PORT"); v != "" {
		p, err := strconv.Atoi(v)
		if err != nil || p < 0 || p > 65535 {
			return c, fmt.Errorf("PORT=%q: give a TCP port 0–65535 (0 picks a free one)", v)
		}
		port = p
	}
	c.Addr = net.JoinHostPort(host, strconv.Itoa(port))

	switch v := AuthMode(strings.ToLower(getenv("AUTH_MODE"))); v {
	case "", AuthNone:
		c.Auth = AuthNone
	case AuthBearer:
		c.Auth = AuthBearer
	default:
		return c, fmt.Errorf("AUTH_MODE=%q: give none or bearer", getenv("AUTH_MODE"))
	}
	c.Token = getenv("AUTH_TOKEN")
	// Closed by default: without ADMIN_TOKEN, a token nobody knows.
	if c.AdminToken = getenv("ADMIN_TOKEN"); c.AdminToken == "" {
		c.AdminToken = rand.Text()
	}
	c.LogRequests = e.flag("LOG_REQUESTS")
	switch v := HoldMode(getenv("HOLD")); v {
	case "", HoldPark:
		c.Hold = HoldPark
	case HoldSleep:
		c.Hold = HoldSleep
	default:
		return c, fmt.Errorf("HOLD=%q: give park or sleep", v)
	}

	if raw := getenv("BEHAVIOR"); raw != "" {
		for _, v := range modelVars {
			if getenv(v) != "" {
				return c, fmt.Errorf("BEHAVIOR and %s are both set: put %s's value into the BEHAVIOR JSON, or unset BEHAVIOR", v, v)
			}
		}
		b, err := DecodeBehavior([]byte(raw))
		if err != nil {
			return c, fmt.Errorf("BEHAVIOR: %w", err)
		}
		c.Behavior = b
		return c, e.err
	}

	name := getenv("MODEL")
	if name == "" {
		name = "envelope"
	}
	preset, ok := Models[name]
	if !ok {
		return c, fmt.Errorf("MODEL=%q: give envelope or calibrated", name)
	}
	b := preset()
	b.Seed = e.uint("SEED", 0)
	b.ToolCount = int(e.int("TOOL_COUNT", int64(b.ToolCount), 0, MaxToolCount))
	b.List = e.latency("LIST", b.List)
	b.Call = e.latency("CALL", b.Call)
	b.ToolErrors = e.fraction("TOOL_ERROR_FRACTION", b.ToolErrors)

	sizeVars := []string{"RESPONSE_BYTES", "RESPONSE_JITTER_BYTES", "LARGE_RESPONSE_FRACTION", "LARGE_RESPONSE_BYTES"}
	if e.anySet(sizeVars...) {
		var base, large Size
		if len(b.Sizes) > 0 {
			base = b.Sizes[0]
		}
		if len(b.Sizes) > 1 {
			large = b.Sizes[1]
		} else {
			large = Size{Bytes: 1 << 20, Jitter: 64 << 10}
		}
		frac := e.fraction("LARGE_RESPONSE_FRACTION", large.Weight/max(base.Weight+large.Weight, 1e-300))
		base = Size{Weight: 1 - frac, Bytes: e.int("RESPONSE_BYTES", base.Bytes, 0, MaxBytes), Jitter: e.int("RESPONSE_JITTER_BYTES", base.Jitter, 0, MaxBytes)}
		if e.set("LARGE_RESPONSE_BYTES") {
			lb := e.int("LARGE_RESPONSE_BYTES", large.Bytes, 0, MaxBytes)
			large = Size{Bytes: lb, Jitter: lb / 16}
		}
		large.Weight = frac
		b.Sizes = []Size{base, large}
	}

	f := &b.Faults
	f.HTTP5xx = e.fraction("HTTP_5XX_FRACTION", f.HTTP5xx)
	f.Status = int(e.int("HTTP_5XX_STATUS", int64(f.Status), 500, 599))
	f.Reset = e.fraction("RESET_FRACTION", f.Reset)
	f.Hang = e.fraction("HANG_FRACTION", f.Hang)
	f.MaxHang = e.ms("MAX_HANG_MS", f.MaxHang)
	f.SlowHeaders = e.fraction("SLOW_HEADERS_FRACTION", f.SlowHeaders)
	f.HeaderDelay = e.ms("SLOW_HEADERS_MS", f.HeaderDelay)
	if e.err != nil {
		return c, e.err
	}
	if err := b.Validate(); err != nil {
		return c, nameVariables(err)
	}
	c.Behavior = b
	return c, nil
}

// nameVariables rewrites the FieldErrors in err to name the variables.
func nameVariables(err error) error {
	var errs []error
	for _, e := range flatten(err) {
		if fe, ok := e.(*FieldError); ok {
			if v, ok := envVar[fe.Field]; ok {
				e = fmt.Errorf("%s (%s): %s", v, fe.Field, fe.Problem)
			}
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// envReader parses variables, keeping the first error.
type envReader struct {
	getenv func(string) string
	err    error
}

func (e *envReader) set(name string) bool { return e.getenv(name) != "" }

func (e *envReader) anySet(names ...string) bool {
	for _, n := range names {
		if e.set(n) {
			return true
		}
	}
	return false
}

func (e *envReader) fail(name, want string) {
	if e.err == nil {
		e.err = fmt.Errorf("%s=%q: give %s", name, e.getenv(name), want)
	}
}

func (e *envReader) flag(name string) bool {
	switch strings.ToLower(e.getenv(name)) {
	case "", "0", "false", "no", "off":
		return false
	case "1", "true", "yes", "on":
		return true
	}
	e.fail(name, "0 or 1")
	return false
}

func (e *envReader) int(name string, def, lo, hi int64) int64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		e.fail(name, fmt.Sprintf("a whole number %d–%d", lo, hi))
		return def
	}
	return n
}

func (e *envReader) uint(name string, def uint64) uint64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		e.fail(name, "a whole number >= 0 (0 picks a random seed)")
		return def
	}
	return n
}

func (e *envReader) fraction(name string, def float64) float64 {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0 && f <= 1) {
		e.fail(name, "a fraction between 0 and 1, such as 0.08")
		return def
	}
	return f
}

func (e *envReader) ms(name string, def Duration) Duration {
	v := e.getenv(name)
	if v == "" {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 0) || f > float64(MaxLatency/time.Millisecond) || math.IsInf(f, 0) {
		e.fail(name, fmt.Sprintf("milliseconds >= 0 and at most %d", MaxLatency/time.Millisecond))
		return def
	}
	return Duration(f * float64(time.Millisecond))
}

// latency reads <P>_LATENCY_MS (the median), <P>_JITTER_MS, <P>_P95_MS and
// <P>_CAP_MS over def. Setting only one of jitter and p95 drops the other
// from def, so CALL_P95_MS alone turns the envelope's fixed latency into a
// log-normal one and CALL_JITTER_MS alone turns the calibrated one fixed.
func (e *envReader) latency(p string, def Latency) Latency {
	l := Latency{
		Median: e.ms(p+"_LATENCY_MS", def.Median),
		Jitter: e.ms(p+"_JITTER_MS", def.Jitter),
		P95:    e.ms(p+"_P95_MS", def.P95),
		Cap:    e.ms(p+"_CAP_MS", def.Cap),
	}
	jitterSet, p95Set := e.set(p+"_JITTER_MS"), e.set(p+"_P95_MS")
	switch {
	case p95Set && !jitterSet:
		l.Jitter = 0
	case jitterSet && !p95Set:
		l.P95, l.Cap = 0, 0
		if e.set(p + "_CAP_MS") {
			l.Cap = e.ms(p+"_CAP_MS", 0)
		}
	}
	return l
}
