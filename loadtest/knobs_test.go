package loadtest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
)

// fatalTB records Fatalf instead of ending the test.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	panic(f)
}

func TestKnobsReadValidateAndRecord(t *testing.T) {
	t.Setenv("USERS", "10, 20")
	t.Setenv("HOLD", "2m")
	t.Setenv("RAMP", "0s")
	k := loadtest.NewKnobs(t)
	assert.Equal(t, []float64{10, 20}, k.Levels("USERS", "200,400", "20,40"))
	assert.Equal(t, 2*time.Minute, k.Duration("HOLD", "90s", "10s"))
	t.Setenv("AGENTS", "idle, 250")
	assert.Equal(t, []float64{0, 250}, k.Levels("AGENTS", "1", "1"), "idle is the idle row, level 0")
	assert.Zero(t, k.DurationOrZero("RAMP", "30s", "5s"))
	gap := k.Duration("GAP_FOR_TEST", "90s", "1s") // unset: the default for the run's size
	if testing.Short() {
		assert.Equal(t, time.Second, gap)
	} else {
		assert.Equal(t, 90*time.Second, gap)
	}
	assert.Equal(t, uint64(7), k.Uint("SEED_FOR_TEST", "7", "7"))
	t.Setenv("BOT_SHARE", "5%")
	assert.InDelta(t, 0.05, k.Share("BOT_SHARE", "0.01", "0.01"), 1e-12, "a percentage is its share")
	assert.Equal(t, 0.08, k.Share("TOOL_ERRORS_FOR_TEST", "0.08", "0.08"))
	k.Set("population", 80)
	p := k.Params()
	assert.Equal(t, "10, 20", p["USERS"])
	assert.Equal(t, "2m", p["HOLD"])
	assert.Equal(t, "80", p["population"])
	assert.Contains(t, p, "GAP_FOR_TEST")
}

// A malformed knob fails the test at once, naming the knob and the fix:
// HOLD=0 no longer starts a stack before the plan rejects it.
func TestKnobsRefuseBadValues(t *testing.T) {
	for _, tc := range []struct {
		env, value string
		read       func(k *loadtest.Knobs)
		want       string
	}{
		{"HOLD", "0", func(k *loadtest.Knobs) { k.Duration("HOLD", "90s", "10s") }, `knob HOLD="0": give a positive duration`},
		{"RAMP", "-1s", func(k *loadtest.Knobs) { k.DurationOrZero("RAMP", "30s", "5s") }, `knob RAMP="-1s": give a duration of zero or more`},
		{"USERS", "10,x", func(k *loadtest.Knobs) { k.Levels("USERS", "1", "1") }, `knob USERS="10,x": give positive levels`},
		{"USERS", "-5", func(k *loadtest.Knobs) { k.Levels("USERS", "1", "1") }, `knob USERS="-5": give positive levels`},
		{"USERS", "idle,ten", func(k *loadtest.Knobs) { k.Levels("USERS", "1", "1") }, `(idle for the stack at rest: idle,50,100)`},
		{"REPLICAS", "0", func(k *loadtest.Knobs) { k.Int("REPLICAS", "1", "1", 1) }, `knob REPLICAS="0": give a whole number of at least 1`},
		{"SEED", "-3", func(k *loadtest.Knobs) { k.Uint("SEED", "1", "1") }, `knob SEED="-3": give a whole number of zero or more`},
		{"BOT_SHARE", "1.5", func(k *loadtest.Knobs) { k.Share("BOT_SHARE", "0.01", "0.01") }, `knob BOT_SHARE="1.5": give a share from 0 to 1`},
		{"TOOL_ERRORS", "-2%", func(k *loadtest.Knobs) { k.Share("TOOL_ERRORS", "0.08", "0.08") }, `knob TOOL_ERRORS="-2%": give a share from 0 to 1`},
		{"FACTOR", "1", func(k *loadtest.Knobs) { k.Knee(kneeDefaults, kneeDefaults) }, `knob FACTOR="1": give a number greater than 1`},
		{"MAX", "50", func(k *loadtest.Knobs) { k.Knee(kneeDefaults, kneeDefaults) }, `plan: knee Max is 50; give the highest level to probe, >= Start (100)`},
	} {
		t.Run("knob="+tc.env, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			f := &fatalTB{TB: t}
			func() {
				defer func() { require.NotNil(t, recover(), "a bad knob must fail the test") }()
				tc.read(loadtest.NewKnobs(f))
			}()
			assert.Contains(t, f.fatal, tc.want)
		})
	}
}

var kneeDefaults = loadtest.Knee{Start: 100, Factor: 1.5, Max: 1000, Ramp: 10 * time.Second, Hold: 30 * time.Second}

// TestKnobsKnee: a knee search's knobs override the defaults and are
// recorded; the defaults fill what is not set.
func TestKnobsKnee(t *testing.T) {
	t.Setenv("START", "200")
	t.Setenv("FACTOR", "2")
	t.Setenv("HOLD", "1m")
	k := loadtest.NewKnobs(t)
	p := k.Knee(kneeDefaults, kneeDefaults)
	assert.Equal(t, loadtest.Knee{Start: 200, Factor: 2, Max: 1000, Precision: 0.1, MaxProbes: 12, Granularity: 1, Trials: 1,
		Ramp: 10 * time.Second, Hold: time.Minute}, p)
	assert.Equal(t, "200", k.Params()["START"])
	assert.Equal(t, "1000", k.Params()["MAX"])
}

// A default written per backend gives each backend its own value, from
// the environment too; a plain value, a URL among them, holds on all.
func TestKnobsPerBackend(t *testing.T) {
	ladder := "docker: 500,1000,1500; local: 1000,2000"
	assert.Equal(t, []float64{500, 1000, 1500}, loadtest.NewKnobs(t).For("docker").Levels("RATES_FOR_TEST", ladder, ladder))
	k := loadtest.NewKnobs(t).For("local")
	assert.Equal(t, []float64{1000, 2000}, k.Levels("RATES_FOR_TEST", ladder, ladder))
	assert.Equal(t, "1000,2000", k.Params()["RATES_FOR_TEST"], "the value used is recorded")
	assert.Equal(t, 90*time.Second, k.Duration("HOLD_FOR_TEST", "90s", "90s"), "a plain value holds on every backend")
	assert.Equal(t, "http://127.0.0.1:9/x", k.String("URL_FOR_TEST", "http://127.0.0.1:9/x", "http://127.0.0.1:9/x"))

	t.Setenv("USERS", "docker: 10; local: 20")
	assert.Equal(t, []float64{20}, loadtest.NewKnobs(t).For("local").Levels("USERS", "1", "1"))
	t.Setenv("USERS", "30")
	assert.Equal(t, []float64{30}, loadtest.NewKnobs(t).For("local").Levels("USERS", ladder, ladder), "the environment overrides every backend's default")

	for _, tc := range []struct{ backend, want string }{
		{"", `is given per backend, but the test did not say which backend it runs on; call loadtest.NewKnobs(t).For(backend)`},
		{"kind", `has no entry for backend "kind"; add "kind: …" to it, or set RATES_FOR_TEST in the environment`},
	} {
		f := &fatalTB{TB: t}
		func() {
			defer func() { require.NotNil(t, recover(), "an unmatched per-backend value must fail the test") }()
			loadtest.NewKnobs(f).For(tc.backend).Levels("RATES_FOR_TEST", ladder, ladder)
		}()
		assert.Contains(t, f.fatal, tc.want)
	}
}
