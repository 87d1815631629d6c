//go:build load

package scenarios

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// knobs reads a scenario's knobs from the environment, with one default for
// full runs and one for -short, and records every value it used.
type knobs struct {
	t      testing.TB
	params map[string]string
}

func newKnobs(t testing.TB) *knobs { return &knobs{t: t, params: map[string]string{}} }

// pick returns the environment's value of name, or the default for the
// run's size.
func (k *knobs) pick(name, full, short string) string {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		v = full
		if testing.Short() {
			v = short
		}
	}
	k.params[name] = v
	return v
}

// Duration reads a duration knob ("90s").
func (k *knobs) Duration(name, full, short string) time.Duration {
	v := k.pick(name, full, short)
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		k.t.Fatalf("knob %s=%q: give a non-negative duration such as 30s", name, v)
	}
	return d
}

// Levels reads a comma-separated list of positive load levels ("50,100,200").
func (k *knobs) Levels(name, full, short string) []float64 {
	v := k.pick(name, full, short)
	var out []float64
	for _, f := range strings.Split(v, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x <= 0 {
			k.t.Fatalf("knob %s=%q: give positive levels separated by commas, such as 50,100,200", name, v)
		}
		out = append(out, x)
	}
	return out
}

// Uint reads an unsigned integer knob.
func (k *knobs) Uint(name, full, short string) uint64 {
	v := k.pick(name, full, short)
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		k.t.Fatalf("knob %s=%q: give a whole number", name, v)
	}
	return n
}

// Set records a derived parameter.
func (k *knobs) Set(name string, v any) { k.params[name] = fmt.Sprint(v) }

// Params returns every knob used, for the result.
func (k *knobs) Params() map[string]string { return k.params }
