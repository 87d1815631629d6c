package dist

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Bursts describes the gaps between one user's calls when calls come in
// bursts: several calls a few seconds apart, then a quiet spell of minutes.
// Burst lengths are geometric with mean MeanCalls calls.
type Bursts struct {
	// InBurst is the gap between two calls of one burst.
	InBurst Dist[time.Duration]
	// Quiet is the gap between the last call of a burst and the first of
	// the next.
	Quiet Dist[time.Duration]
	// MeanCalls is the mean number of calls per burst, >= 1.
	MeanCalls float64
}

// CalibratedBursts returns bursts whose gaps inside a burst are log-normal
// with the given median and p95, whose bursts hold meanCalls calls on
// average, and whose quiet gaps are exponential with the mean that makes the
// overall mean gap between calls equal to mean. The MCP gateway workload is
// CalibratedBursts(6*time.Second, 20*time.Second, 5, 90*time.Second).
func CalibratedBursts(inMedian, inP95 time.Duration, meanCalls float64, mean time.Duration) (Bursts, error) {
	in, err := LogNormalFromMedianP95(inMedian, inP95, 0)
	if err != nil {
		return Bursts{}, fmt.Errorf("bursts: in-burst gap: %w", err)
	}
	if meanCalls < 1 {
		return Bursts{}, fmt.Errorf("bursts: mean calls per burst %v must be >= 1", meanCalls)
	}
	// Over one burst of k calls there are k-1 in-burst gaps and one quiet
	// gap, so mean = ((k-1)·E[in] + E[quiet]) / k.
	quiet := meanCalls*float64(mean) - (meanCalls-1)*float64(in.Mean())
	if quiet <= 0 {
		return Bursts{}, fmt.Errorf("bursts: overall mean gap %v is too short for %v calls per burst with in-burst mean %v; raise the mean or lower the burst length",
			mean, meanCalls, in.Mean())
	}
	return Bursts{InBurst: in, Quiet: Exponential[time.Duration]{Mean: time.Duration(quiet)}, MeanCalls: meanCalls}, nil
}

// Sample draws the gap before a user's next call: a quiet gap, which
// starts a new burst, with probability 1/MeanCalls, else a gap inside the
// burst. Successive gaps are independent, so Bursts is a distribution of
// gaps like any other: [Residual] draws a user's first gap at a random
// point of its bursts and quiet spells.
func (b Bursts) Sample(r *rand.Rand) time.Duration {
	if r.Float64() < 1/b.MeanCalls {
		return b.Quiet.Sample(r)
	}
	return b.InBurst.Sample(r)
}

// LengthBiased draws a gap length-biased (see the package's LengthBiased):
// a random instant falls in a quiet spell with probability proportional to
// the share of quiet gaps times their mean — 86% of the time for the
// calibrated gateway's bursts, though only one gap in five is quiet.
func (b Bursts) LengthBiased(r *rand.Rand) time.Duration {
	quiet := Mean(b.Quiet) / b.MeanCalls
	if r.Float64()*b.mean() < quiet {
		return LengthBiased(b.Quiet, r)
	}
	return LengthBiased(b.InBurst, r)
}

func (b Bursts) mean() float64 {
	p := 1 / b.MeanCalls
	return p*Mean(b.Quiet) + (1-p)*Mean(b.InBurst)
}
