package relayload

import (
	"fmt"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/mockupstream"
)

// Model reads the gateway user model's parameters from knobs — the
// environment, recorded in the result — over g's and the mock upstream's
// b's fields, so that a run can ask "what if a tenth of our users were
// bots", or "what if our tools answered in 3 s", without editing the
// scenario. Each knob's default is the field's value as the scenario set
// it (the documented default where it left it zero):
//
//	BOT_SHARE        share of users that are bots (0.01); 0: none
//	RELIST           share of calls preceded by a tools/list (0.1)
//	DASHBOARD_SHARE  share of calls followed by a dashboard view (0.05)
//	CALL_MEDIAN      the upstream's median tool-call latency (1.2s)
//	CALL_P95         its 95th percentile (12s): log-normal between them
//	UPSTREAM_CAP     its slowest answer (50s)
//	TOOL_ERRORS      share of calls the upstream answers with a tool error (0.08)
//	BIG_ANSWERS      share of answers of about 1 MiB, the rest about 4 KiB (0.02)
//
// Shares may be written as percentages ("10%"). A value that does not
// is no share or no duration fails the test at once; Model returns an
// error when the upstream's knobs together make no valid behavior (a
// median over its p95).
func Model(k *loadtest.Knobs, g *Gateway, b *mockupstream.Behavior) error {
	share := func(name string, field *float64, def float64) {
		v := *field
		switch {
		case v == 0:
			v = def
		case v < 0:
			v = 0
		}
		d := fmt.Sprint(v)
		x := k.Share(name, d, d)
		if x == 0 {
			x = -1 // the Gateway's "none": zero is its default
		}
		*field = x
	}
	share("BOT_SHARE", &g.BotShare, 0.01)
	share("RELIST", &g.Relist, 0.1)
	share("DASHBOARD_SHARE", &g.Dashboard, 0.05)

	dur := func(name string, field *mockupstream.Duration) {
		d := time.Duration(*field).String()
		*field = mockupstream.Duration(k.Duration(name, d, d))
	}
	dur("CALL_MEDIAN", &b.Call.Median)
	if b.Call.P95 > 0 {
		dur("CALL_P95", &b.Call.P95)
	}
	if b.Call.Cap > 0 {
		dur("UPSTREAM_CAP", &b.Call.Cap)
	}
	errs := fmt.Sprint(b.ToolErrors)
	b.ToolErrors = k.Share("TOOL_ERRORS", errs, errs)
	if len(b.Sizes) == 2 && b.Sizes[1].Bytes > b.Sizes[0].Bytes {
		total := b.Sizes[0].Weight + b.Sizes[1].Weight
		big := fmt.Sprint(b.Sizes[1].Weight / total)
		s := k.Share("BIG_ANSWERS", big, big)
		b.Sizes[0].Weight, b.Sizes[1].Weight = 1-s, s
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("relayload: knobs CALL_MEDIAN, CALL_P95, UPSTREAM_CAP, TOOL_ERRORS, BIG_ANSWERS make no valid upstream: %w", err)
	}
	return nil
}
