package loadtest

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// counter is a sampler whose value is the number of times it was sampled.
type counter struct{ n float64 }

func (c *counter) Sample(context.Context, time.Time) ([]Measurement, error) {
	c.n++
	return []Measurement{{Component: "c", Metric: "n", Unit: "count", Value: c.n}}, nil
}

func TestSampleLogWeightsByInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &counter{}
		l := newSampleLog([]Sampler{c}, t.Logf)
		ctx := context.Background()
		start := time.Now()
		l.sampleAt(ctx, time.Now()) // 1 at 0 s: before the window
		time.Sleep(4 * time.Second)
		l.sampleAt(ctx, time.Now()) // 2 at 4 s, covering 4 s
		time.Sleep(100 * time.Millisecond)
		l.sampleAt(ctx, time.Now()) // skipped: too soon after the last
		time.Sleep(time.Second)
		l.sampleAt(ctx, time.Now()) // 3 at 5.1 s, covering 1.1 s
		sum := l.summary(start.Add(time.Second), time.Now())
		require.Len(t, sum, 1)
		s := sum[0]
		assert.Equal(t, 2, s.Samples)
		assert.Equal(t, 3.0, s.Max)
		assert.InDelta(t, (2*4+3*1.1)/5.1, s.Mean, 1e-9, "time-weighted mean")
	})
}
