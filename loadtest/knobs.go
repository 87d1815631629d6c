package loadtest

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Knobs reads a scenario's knobs — environment variables such as USERS,
// RAMP or HOLD — each with one default for a full run and one for -short,
// fails the test at once on a malformed value (before any stack starts),
// and records every value it used, so that Params puts them in the result:
//
//	k := loadtest.NewKnobs(t)
//	users := k.Levels("USERS", "200,400,800", "20,40,80")
//	ramp := k.DurationOrZero("RAMP", "30s", "5s")
//	hold := k.Duration("HOLD", "90s", "10s")
//	…
//	loadtest.Test(t, loadtest.Scenario{…, Params: k.Params()})
//
// A default (or an environment value) may differ per backend, written
// "docker: 500,1000,1500; local: 1000,2000" and picked by the name For
// gives; a plain value holds on every backend:
//
//	k := loadtest.NewKnobs(t).For(backend)
//	rates := k.Levels("RATES", "docker: 500,1000,1500; local: 1000,2000", "50,100")
type Knobs struct {
	t       testing.TB
	params  map[string]string
	backend string
}

// NewKnobs returns the knobs of test t.
func NewKnobs(t testing.TB) *Knobs { return &Knobs{t: t, params: map[string]string{}} }

// For selects the backend ("docker", "local", or any name of a matrix of
// your own) whose entry a per-backend value gives, and returns k.
func (k *Knobs) For(backend string) *Knobs {
	k.backend = strings.TrimSpace(backend)
	return k
}

// String returns the knob's value: the environment's, else the default for
// the run's size (short under go test -short); of a per-backend value,
// the entry of the backend For selected.
func (k *Knobs) String(name, full, short string) string {
	k.t.Helper()
	v, ok := os.LookupEnv(name)
	from := "the environment's " + name
	if !ok || strings.TrimSpace(v) == "" {
		v, from = full, "its default"
		if testing.Testing() && testing.Short() {
			v, from = short, "its -short default"
		}
	}
	v = strings.TrimSpace(v)
	if entries, ok := perBackend(v); ok {
		switch {
		case k.backend == "":
			k.t.Fatalf("knob %s: %s %q is given per backend, but the test did not say which backend it runs on; call loadtest.NewKnobs(t).For(backend)", name, from, v)
		case entries[k.backend] == "":
			k.t.Fatalf("knob %s: %s %q has no entry for backend %q; add \"%s: …\" to it, or set %s in the environment", name, from, v, k.backend, k.backend, name)
		}
		v = entries[k.backend]
	}
	k.params[name] = v
	return v
}

// perBackend splits a value written per backend ("docker: 1,2; local: 3")
// into its entries; ok is false for a plain value. An entry's name is a
// word and its value holds no slash, so a URL ("http://…") stays plain.
func perBackend(v string) (entries map[string]string, ok bool) {
	if !perBackendForm.MatchString(v) {
		return nil, false
	}
	entries = map[string]string{}
	for _, e := range strings.Split(v, ";") {
		if name, val, found := strings.Cut(e, ":"); found {
			entries[strings.TrimSpace(name)] = strings.TrimSpace(val)
		}
	}
	return entries, true
}

var perBackendForm = regexp.MustCompile(`^[a-z][a-z0-9_-]*\s*:[^;/:]*(;\s*[a-z][a-z0-9_-]*\s*:[^;/:]*)*;?$`)

// Duration reads a positive duration knob ("90s").
func (k *Knobs) Duration(name, full, short string) time.Duration {
	k.t.Helper()
	v := k.String(name, full, short)
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		k.t.Fatalf("knob %s=%q: give a positive duration such as 30s", name, v)
	}
	return d
}

// DurationOrZero reads a duration knob that may be zero ("0s": no ramp).
func (k *Knobs) DurationOrZero(name, full, short string) time.Duration {
	k.t.Helper()
	v := k.String(name, full, short)
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		k.t.Fatalf("knob %s=%q: give a duration of zero or more such as 30s", name, v)
	}
	return d
}

// Levels reads a comma-separated list of positive load levels
// ("200,400,800": users, or arrivals per second). "idle" (or 0) is the
// idle row, the stack at rest (see [Ladder]): "idle,250,500".
func (k *Knobs) Levels(name, full, short string) []float64 {
	k.t.Helper()
	v := k.String(name, full, short)
	var out []float64
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		if f == "idle" {
			f = "0"
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || !(x >= 0) || x > 1e9 {
			k.t.Fatalf("knob %s=%q: give positive levels separated by commas, such as 50,100,200 (idle for the stack at rest: idle,50,100)", name, v)
		}
		out = append(out, x)
	}
	return out
}

// Int reads an integer knob of at least min.
func (k *Knobs) Int(name, full, short string, min int) int {
	k.t.Helper()
	v := k.String(name, full, short)
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		k.t.Fatalf("knob %s=%q: give a whole number of at least %d", name, v, min)
	}
	return n
}

// Float reads a number knob greater than min ("1.5").
func (k *Knobs) Float(name, full, short string, min float64) float64 {
	k.t.Helper()
	v := k.String(name, full, short)
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || !(x > min) || x > 1e12 {
		k.t.Fatalf("knob %s=%q: give a number greater than %g", name, v, min)
	}
	return x
}

// Share reads a knob that is a share of a whole, 0 to 1 ("0.05"); a
// percentage ("5%") is read as its share.
func (k *Knobs) Share(name, full, short string) float64 {
	k.t.Helper()
	v := k.String(name, full, short)
	num, pct := strings.CutSuffix(v, "%")
	x, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if pct {
		x /= 100
	}
	if err != nil || !(x >= 0 && x <= 1) {
		k.t.Fatalf("knob %s=%q: give a share from 0 to 1 (0.05) or a percentage (5%%)", name, v)
	}
	return x
}

// Knee reads a knee search's knobs — START, FACTOR, MAX, PRECISION,
// PROBES, RAMP, HOLD — with full's and short's fields as their defaults,
// and fails the test on a plan that does not validate.
func (k *Knobs) Knee(full, short Knee) Knee {
	k.t.Helper()
	full, short = full.withDefaults(), short.withDefaults()
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	p := Knee{
		Start:       k.Float("START", g(full.Start), g(short.Start), 0),
		Factor:      k.Float("FACTOR", g(full.Factor), g(short.Factor), 1),
		Max:         k.Float("MAX", g(full.Max), g(short.Max), 0),
		Precision:   k.Float("PRECISION", g(full.Precision), g(short.Precision), 0),
		MaxProbes:   k.Int("PROBES", strconv.Itoa(full.MaxProbes), strconv.Itoa(short.MaxProbes), 1),
		Ramp:        k.DurationOrZero("RAMP", full.Ramp.String(), short.Ramp.String()),
		Hold:        k.Duration("HOLD", full.Hold.String(), short.Hold.String()),
		Granularity: full.Granularity,
		Trials:      full.Trials,
	}
	if testing.Testing() && testing.Short() {
		p.Granularity, p.Trials = short.Granularity, short.Trials
	}
	if err := p.Validate(); err != nil {
		k.t.Fatalf("knobs START, FACTOR, MAX, PRECISION, PROBES, RAMP, HOLD: %v", err)
	}
	return p
}

// Uint reads an unsigned integer knob, such as a SEED.
func (k *Knobs) Uint(name, full, short string) uint64 {
	k.t.Helper()
	v := k.String(name, full, short)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		k.t.Fatalf("knob %s=%q: give a whole number of zero or more", name, v)
	}
	return n
}

// Set records a derived parameter (a population's size, a model's shape).
func (k *Knobs) Set(name string, v any) { k.params[name] = fmt.Sprint(v) }

// Params returns every knob read and parameter set, for Scenario.Params.
func (k *Knobs) Params() map[string]string {
	out := make(map[string]string, len(k.params))
	for n, v := range k.params {
		out[n] = v
	}
	return out
}
