package seed

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgressLogsEveryInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lines []string
		c := newConfig([]Option{WithLogf(func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) })})
		p := newProgress(&c, "usage", 0)
		// 100 s of loading at 4,096 rows/s, one look at the clock a second.
		for range 100 {
			p.add(progressCheckRows)
			time.Sleep(time.Second)
		}
		p.done()
		// Lines at 5, 10, …, 95 s, then the summary at 100 s.
		require.Len(t, lines, 20)
		assert.Equal(t, "seed: usage: 24,576 rows, 4,915 rows/s", lines[0], "at 5 s: six adds over 5 s")
		assert.Equal(t, "seed: usage: 409,600 rows in 1m40s (4,096 rows/s)", lines[19])
	})
}

func TestProgressShowsPercentOfExpected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lines []string
		c := newConfig([]Option{WithLogf(func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }), WithProgressEvery(time.Second)})
		p := newProgress(&c, "events", 10*progressCheckRows)
		time.Sleep(time.Second)
		p.add(4 * progressCheckRows)
		require.Len(t, lines, 1)
		assert.Equal(t, "seed: events: 16,384 of 40,960 rows (40%), 16,384 rows/s", lines[0])
	})
}

func TestProgressQuietForShortLoads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lines []string
		c := newConfig([]Option{WithLogf(func(f string, a ...any) { lines = append(lines, f) })})
		p := newProgress(&c, "users", 0)
		for range 4 {
			p.add(progressCheckRows)
			time.Sleep(time.Second)
		}
		p.done()
		assert.Empty(t, lines, "a 4 s load under the 5 s interval logs nothing")
	})
}

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"},               // zero
		{999, "999"},           // no separator
		{1000, "1,000"},        // first separator
		{1234567, "1,234,567"}, // several
		{-45000, "-45,000"},    // negative
	} {
		t.Run(fmt.Sprintf("n=%d", tc.n), func(t *testing.T) {
			assert.Equal(t, tc.want, count(tc.n))
		})
	}
}
