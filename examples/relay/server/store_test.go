package server

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

func TestP95(t *testing.T) {
	tests := []struct {
		name   string
		n      int64
		lo, hi float64
		want   float64
	}{
		{name: "one", n: 1, lo: 7, hi: 7, want: 7},               // a single value is every percentile
		{name: "two", n: 2, lo: 10, hi: 20, want: 19.5},          // rank 0.95 between the two
		{name: "twenty", n: 20, lo: 100, hi: 200, want: 105},     // rank 18.05: 5% of the way to the next
		{name: "twenty_one", n: 21, lo: 100, hi: 100, want: 100}, // rank 19 exactly
	}
	for _, tc := range tests {
		t.Run("n="+tc.name, func(t *testing.T) {
			assert.InDelta(t, tc.want, p95(tc.n, tc.lo, tc.hi), 1e-9)
		})
	}
}

func TestSortAndFinishStats(t *testing.T) {
	s := []ToolStats{{Tool: "b", Calls: 1, Errors: 1}, {Tool: "a", Calls: 4, Errors: 1}, {Tool: "c", Calls: 1}}
	sortStats(s)
	s = finishStats(s)
	assert.Equal(t, []string{"a", "b", "c"}, []string{s[0].Tool, s[1].Tool, s[2].Tool}, "most calls first, then by name")
	assert.Equal(t, []float64{0.25, 1, 0}, []float64{s[0].ErrorRate, s[1].ErrorRate, s[2].ErrorRate})
}

func TestLatestVersion(t *testing.T) {
	for _, d := range []schema.Dialect{schema.Postgres, schema.SQLite} {
		ms := schema.Migrations(d)
		assert.Equal(t, ms[len(ms)-1].Version, latestVersion(d), string(d))
	}
}
