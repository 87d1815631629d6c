package mcp

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// MeanGap scales the calibrated bursts: a short run keeps their shape at a
// mean of its own.
func TestGatewayMeanGap(t *testing.T) {
	for _, mean := range []time.Duration{0, time.Second, 30 * time.Second} {
		g, err := (Gateway{URL: "http://127.0.0.1:1/mcp", HTTP: &httpc.Client{}, Token: func(int) string { return "" }, MeanGap: mean}).withDefaults()
		require.NoError(t, err)
		gaps := g.Gaps.Gaps(rand.New(rand.NewPCG(1, 2)))
		var sum time.Duration
		const n = 50000
		for range n {
			sum += gaps.Next()
		}
		want := mean
		if want == 0 {
			want = 90 * time.Second
		}
		assert.InEpsilon(t, float64(want), float64(sum/n), 0.08, "MeanGap %v", mean)
	}
}
