package relayseed

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

func TestCallsAreExactInCountAndOrderedInTheWindow(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		days int
	}{
		{"n=0", 0, 1},                   // nothing
		{"n=1", 1, 1},                   // a single call still lands somewhere
		{"n=7/days=30", 7, 30},          // fewer calls than hours
		{"n=10000/days=3", 10_000, 3},   // many calls per hour
		{"n=5000/days=730", 5_000, 730}, // a long, sparse history
	} {
		t.Run(tc.name, func(t *testing.T) {
			end := time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)
			p := Spec{Days: tc.days, End: end, UsageRows: tc.n, Secret: []byte("s")}.normalized().population()
			g := newGenerator(p, schema.Postgres)
			var last time.Time
			got := 0
			g.calls(tc.n, streamUsage, func(c *call) bool {
				got++
				require.False(t, c.at.Before(g.start), "call %d at %v before the start %v", got, c.at, g.start)
				require.True(t, c.at.Before(p.Spec.End), "call %d at %v not before the end", got, c.at)
				require.False(t, c.at.Before(last), "call %d out of order", got)
				last = c.at
				return true
			})
			assert.Equal(t, tc.n, got)
		})
	}
}

func TestCallsStopWhenYieldSaysSo(t *testing.T) {
	p := Spec{UsageRows: 1000, Secret: []byte("s")}.normalized().population()
	got := 0
	newGenerator(p, schema.SQLite).calls(1000, streamUsage, func(*call) bool { got++; return got < 10 })
	assert.Equal(t, 10, got)
}

func TestCallsFollowTheWeeklyCycle(t *testing.T) {
	// Four whole weeks ending on a Monday 00:00 UTC.
	end := time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC)
	p := Spec{Days: 28, End: end, UsageRows: 100_000, Secret: []byte("s")}.normalized().population()
	var byDay [7]int
	newGenerator(p, schema.Postgres).calls(100_000, streamUsage, func(c *call) bool {
		byDay[c.at.Weekday()]++
		return true
	})
	// Weights 3 (Sunday), 10 (weekdays), 4 (Saturday) out of 57: allotted
	// exactly, so only the floor of each hour's share can move a count.
	assert.InDelta(t, 100_000*3/57, byDay[time.Sunday], 30)
	assert.InDelta(t, 100_000*10/57, byDay[time.Wednesday], 30)
	assert.InDelta(t, 100_000*4/57, byDay[time.Saturday], 30)
}

func TestMulDiv(t *testing.T) {
	for _, tc := range []struct{ a, b, c, want int64 }{
		{0, 5, 7, 0},  // zero
		{10, 3, 4, 7}, // rounds down
		{1_000_000_000, 92_000_000, 92_000_000, 1e9},         // the whole
		{1_000_000_000, 91_999_999, 92_000_000, 999_999_989}, // no overflow near the top
	} {
		t.Run(fmt.Sprintf("a=%d/b=%d/c=%d", tc.a, tc.b, tc.c), func(t *testing.T) {
			assert.Equal(t, tc.want, mulDiv(tc.a, tc.b, tc.c))
		})
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"plain", `quo"te`, `back\slash`, "new\nline\x01", "ünïcode"} {
		t.Run("s="+fmt.Sprintf("%q", s), func(t *testing.T) {
			var got string
			require.NoError(t, json.Unmarshal(appendJSONString(nil, s), &got))
			assert.Equal(t, s, got)
		})
	}
}

func TestTablesYieldTheirLen(t *testing.T) {
	p := Spec{Workspaces: 3, UsersPerWorkspace: 4, ConnectorsPerUser: 2, UsageRows: 321, EventsRows: 45, Days: 2, Secret: []byte("s")}.normalized().population()
	for _, d := range []schema.Dialect{schema.Postgres, schema.SQLite} {
		for _, tb := range p.Tables(d) {
			t.Run(fmt.Sprintf("dialect=%s/table=%s", d, tb.Name), func(t *testing.T) {
				n := int64(0)
				require.NoError(t, tb.Rows(func(row []any) bool {
					n++
					require.Len(t, row, len(tb.Columns))
					return true
				}))
				assert.Equal(t, tb.Len, n)
			})
		}
	}
}
