// Package kit holds what the example services repeat: reading their
// configuration from the environment (Env), counting and timing HTTP
// requests (HTTPMetrics), serving HTTP once until a drain (HTTPServer),
// migrating a PostgreSQL schema (Migrate) and a process's life from
// start to drain (Process). The examples are separate products; each
// keeps its own handlers, schema, roles and drain, and takes from here
// only what is the same to the letter.
package kit

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Env reads a service's configuration from its environment through getenv
// (os.Getenv in a program). A variable left empty keeps the default in
// dst; a bad value is collected, naming the variable and what would be
// accepted, so that Err reports every one at once.
type Env struct {
	getenv func(string) string
	errs   []error
}

// NewEnv returns an Env reading through getenv.
func NewEnv(getenv func(string) string) *Env { return &Env{getenv: getenv} }

// value returns the variable's value, trimmed; "" when unset or blank.
func (e *Env) value(name string) string { return strings.TrimSpace(e.getenv(name)) }

// String sets dst to the variable's value when it has one.
func (e *Env) String(name string, dst *string) {
	if v := e.value(name); v != "" {
		*dst = v
	}
}

// Duration sets dst to a positive duration ("30s", "1500ms").
func (e *Env) Duration(name string, dst *time.Duration) { e.duration(name, dst, false) }

// DurationOrZero sets dst to a duration, 0 included (a feature turned off).
func (e *Env) DurationOrZero(name string, dst *time.Duration) { e.duration(name, dst, true) }

func (e *Env) duration(name string, dst *time.Duration, zero bool) {
	v := e.value(name)
	if v == "" {
		return
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || (d == 0 && !zero) {
		want := "a positive duration such as 30s or 1500ms"
		if zero {
			want = "a duration such as 30s or 1500ms, or 0"
		}
		e.Fail(fmt.Errorf("%s=%q: want %s", name, v, want))
		return
	}
	*dst = d
}

// Int64 sets dst to a positive integer.
func (e *Env) Int64(name string, dst *int64) {
	v := e.value(name)
	if v == "" {
		return
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		e.Fail(fmt.Errorf("%s=%q: want a positive integer", name, v))
		return
	}
	*dst = n
}

// Int sets dst to a positive integer.
func (e *Env) Int(name string, dst *int) {
	n := int64(*dst)
	e.Int64(name, &n)
	*dst = int(n)
}

// Bool sets dst from 1, true or on, and 0, false or off.
func (e *Env) Bool(name string, dst *bool) {
	switch v := e.value(name); v {
	case "":
	case "1", "true", "on":
		*dst = true
	case "0", "false", "off":
		*dst = false
	default:
		e.Fail(fmt.Errorf("%s=%q: want 0 or 1", name, v))
	}
}

// LogLevel sets dst from debug, info, warn or error.
func (e *Env) LogLevel(name string, dst *slog.Level) {
	if v := e.value(name); v != "" {
		if err := dst.UnmarshalText([]byte(v)); err != nil {
			e.Fail(fmt.Errorf("%s=%q: want debug, info, warn or error", name, v))
		}
	}
}

// Parse calls parse with the variable's value when it has one; its error
// is collected under the variable's name.
func (e *Env) Parse(name string, parse func(v string) error) {
	if v := e.value(name); v != "" {
		if err := parse(v); err != nil {
			e.Fail(fmt.Errorf("%s: %w", name, err))
		}
	}
}

// Fail collects err.
func (e *Env) Fail(err error) { e.errs = append(e.errs, err) }

// Err returns every error collected, joined; nil when there is none.
func (e *Env) Err() error { return errors.Join(e.errs...) }
