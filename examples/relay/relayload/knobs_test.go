package relayload_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/relayload"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/mockupstream"
)

func TestModelKnobs(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		g, b := &relayload.Gateway{Relist: 0.3}, mockupstream.Calibrated()
		k := loadtest.NewKnobs(t)
		require.NoError(t, relayload.Model(k, g, &b))
		assert.Equal(t, 0.01, g.BotShare, "a zero field takes the documented default")
		assert.Equal(t, 0.3, g.Relist, "a field the scenario set is the default")
		assert.Equal(t, 0.05, g.Dashboard)
		assert.Equal(t, mockupstream.Calibrated(), b, "no knob set: the calibrated upstream, unchanged")
		p := k.Params()
		for _, name := range []string{"BOT_SHARE", "RELIST", "DASHBOARD_SHARE", "CALL_MEDIAN", "CALL_P95", "UPSTREAM_CAP", "TOOL_ERRORS", "BIG_ANSWERS"} {
			assert.Contains(t, p, name, "every model knob is recorded in the result")
		}
		assert.Equal(t, "1.2s", p["CALL_MEDIAN"])
		assert.Equal(t, "0.02", p["BIG_ANSWERS"])
	})
	t.Run("set", func(t *testing.T) {
		t.Setenv("BOT_SHARE", "10%")
		t.Setenv("DASHBOARD_SHARE", "0")
		t.Setenv("CALL_MEDIAN", "3s")
		t.Setenv("CALL_P95", "20s")
		t.Setenv("UPSTREAM_CAP", "30s")
		t.Setenv("TOOL_ERRORS", "0.2")
		t.Setenv("BIG_ANSWERS", "0.5")
		g, b := &relayload.Gateway{}, mockupstream.Calibrated()
		require.NoError(t, relayload.Model(loadtest.NewKnobs(t), g, &b))
		assert.InDelta(t, 0.1, g.BotShare, 1e-12)
		assert.Negative(t, g.Dashboard, "0 is none: the Gateway's negative")
		assert.Equal(t, mockupstream.Latency{Median: mockupstream.Duration(3 * time.Second), P95: mockupstream.Duration(20 * time.Second),
			Cap: mockupstream.Duration(30 * time.Second)}, b.Call)
		assert.Equal(t, 0.2, b.ToolErrors)
		assert.Equal(t, []float64{0.5, 0.5}, []float64{b.Sizes[0].Weight, b.Sizes[1].Weight})
		_, err := (&relayload.Gateway{URL: "http://127.0.0.1:1/mcp", HTTP: nil, BotShare: g.BotShare}).Users()
		assert.NotContains(t, errString(err), "BotShare", "the knob's share is one the Gateway takes")
	})
	t.Run("no valid upstream", func(t *testing.T) {
		t.Setenv("CALL_MEDIAN", "30s") // over the p95 of 12 s
		g, b := &relayload.Gateway{}, mockupstream.Calibrated()
		err := relayload.Model(loadtest.NewKnobs(t), g, &b)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "CALL_MEDIAN")
		assert.Contains(t, err.Error(), "p95")
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
