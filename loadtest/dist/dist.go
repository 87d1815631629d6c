// Package dist holds the random distributions a load test draws from: think
// times, upstream latencies, response sizes and weighted choices.
//
// Every distribution is a small value that draws from a caller-supplied
// *rand.Rand, so a run is reproducible from its seed: give each goroutine its
// own generator from [New] (math/rand/v2 generators are not safe for
// concurrent use). Distributions are generic over the number type they
// produce, so the same code draws a time.Duration, a byte count or a float.
package dist

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Number is the set of types a distribution can produce. time.Duration and
// byte counts are both ~int64.
type Number interface {
	~int | ~int32 | ~int64 | ~float64
}

// Dist is a distribution of values of type T.
type Dist[T Number] interface {
	// Sample draws one value using r.
	Sample(r *rand.Rand) T
}

// New returns a generator seeded from seed and stream. The same pair always
// yields the same sequence; use a distinct stream (for example a user index)
// for every goroutine of a run.
func New(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15))
}

// Fixed is Value ± Jitter, uniform over [Value-Jitter, Value+Jitter] and
// never below zero. The zero Jitter gives exactly Value.
type Fixed[T Number] struct {
	Value  T
	Jitter T
}

// Sample draws one value.
func (f Fixed[T]) Sample(r *rand.Rand) T {
	if f.Jitter == 0 {
		return f.Value
	}
	v := float64(f.Value) + (2*r.Float64()-1)*float64(f.Jitter)
	return T(math.Max(0, v))
}

// Validate reports a negative value or jitter.
func (f Fixed[T]) Validate() error {
	if f.Value < 0 || f.Jitter < 0 {
		return fmt.Errorf("fixed %v±%v: value and jitter must be >= 0", f.Value, f.Jitter)
	}
	return nil
}

// Uniform is uniform over [Min, Max).
type Uniform[T Number] struct {
	Min, Max T
}

// Sample draws one value.
func (u Uniform[T]) Sample(r *rand.Rand) T {
	return T(float64(u.Min) + r.Float64()*float64(u.Max-u.Min))
}

// Validate reports Max below Min or a negative bound.
func (u Uniform[T]) Validate() error {
	if u.Min < 0 || u.Max < u.Min {
		return fmt.Errorf("uniform [%v, %v): need 0 <= min <= max", u.Min, u.Max)
	}
	return nil
}

// Exponential has mean Mean (the gaps of a Poisson process with rate 1/Mean).
// A non-zero Cap truncates the tail: draws above it return Cap.
type Exponential[T Number] struct {
	Mean T
	Cap  T
}

// Sample draws one value.
func (e Exponential[T]) Sample(r *rand.Rand) T {
	v := r.ExpFloat64() * float64(e.Mean)
	if e.Cap > 0 && v > float64(e.Cap) {
		v = float64(e.Cap)
	}
	return T(v)
}

// Validate reports a non-positive mean or a negative cap.
func (e Exponential[T]) Validate() error {
	if e.Mean <= 0 || e.Cap < 0 {
		return fmt.Errorf("exponential mean %v cap %v: need mean > 0 and cap >= 0", e.Mean, e.Cap)
	}
	return nil
}

// z95 is the standard normal quantile at 0.95.
const z95 = 1.6448536269514722

// LogNormal is a log-normal distribution with parameters Mu and Sigma of the
// underlying normal (in units of T), truncated at Cap when Cap > 0. Build it
// with [LogNormalFromMedianP95], which fits the published description of a
// latency ("median 1.2 s, 5% over 12 s, capped at 50 s").
type LogNormal[T Number] struct {
	Mu, Sigma float64
	Cap       T
}

// LogNormalFromMedianP95 fits a log-normal whose median is median and whose
// 95th percentile is p95, truncated at cap (0 for none). Truncation clamps
// draws to cap, so the median and p95 are kept when cap is above p95.
func LogNormalFromMedianP95[T Number](median, p95, cap T) (LogNormal[T], error) {
	switch {
	case median <= 0:
		return LogNormal[T]{}, fmt.Errorf("log-normal: median %v must be > 0", median)
	case p95 < median:
		return LogNormal[T]{}, fmt.Errorf("log-normal: p95 %v is below the median %v; give p95 >= median", p95, median)
	case cap < 0:
		return LogNormal[T]{}, fmt.Errorf("log-normal: cap %v must be >= 0 (0 for no cap)", cap)
	case cap > 0 && cap < p95:
		return LogNormal[T]{}, fmt.Errorf("log-normal: cap %v is below the p95 %v; raise the cap or lower p95", cap, p95)
	}
	mu := math.Log(float64(median))
	sigma := (math.Log(float64(p95)) - mu) / z95
	return LogNormal[T]{Mu: mu, Sigma: sigma, Cap: cap}, nil
}

// MustLogNormal is [LogNormalFromMedianP95] for constant arguments; it panics
// on an error.
func MustLogNormal[T Number](median, p95, cap T) LogNormal[T] {
	d, err := LogNormalFromMedianP95(median, p95, cap)
	if err != nil {
		panic(err)
	}
	return d
}

// Sample draws one value.
func (l LogNormal[T]) Sample(r *rand.Rand) T {
	v := math.Exp(l.Mu + l.Sigma*r.NormFloat64())
	if l.Cap > 0 && v > float64(l.Cap) {
		v = float64(l.Cap)
	}
	return T(v)
}

// Median returns the distribution's median.
func (l LogNormal[T]) Median() T { return T(math.Exp(l.Mu)) }

// Mean returns the mean of the untruncated distribution.
func (l LogNormal[T]) Mean() T { return T(math.Exp(l.Mu + l.Sigma*l.Sigma/2)) }

// Quantile returns the value at percentile p (0 < p < 100) of the
// untruncated distribution, clamped to Cap.
func (l LogNormal[T]) Quantile(p float64) T {
	v := math.Exp(l.Mu + l.Sigma*normQuantile(p/100))
	if l.Cap > 0 && v > float64(l.Cap) {
		v = float64(l.Cap)
	}
	return T(v)
}

// normQuantile is the inverse standard normal CDF.
func normQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// Weighted is one option of a [Choice] with its relative weight.
type Weighted[V any] struct {
	Weight float64
	Value  V
}

// Choice picks among values with probability proportional to their weights.
// Build it with [NewChoice]; the zero Choice is empty and Pick panics.
type Choice[V any] struct {
	values []V
	cum    []float64 // cumulative weights, last == total
}

// NewChoice returns a choice over options. Weights must be >= 0 and at least
// one must be > 0.
func NewChoice[V any](options ...Weighted[V]) (Choice[V], error) {
	var c Choice[V]
	total := 0.0
	for i, o := range options {
		if o.Weight < 0 || math.IsNaN(o.Weight) || math.IsInf(o.Weight, 0) {
			return Choice[V]{}, fmt.Errorf("choice: option %d has weight %v; weights must be finite and >= 0", i, o.Weight)
		}
		if o.Weight == 0 {
			continue
		}
		total += o.Weight
		c.values = append(c.values, o.Value)
		c.cum = append(c.cum, total)
	}
	if total == 0 {
		return Choice[V]{}, errors.New("choice: no option has a positive weight")
	}
	return c, nil
}

// Len returns the number of options with a positive weight.
func (c Choice[V]) Len() int { return len(c.values) }

// Pick draws one value.
func (c Choice[V]) Pick(r *rand.Rand) V {
	x := r.Float64() * c.cum[len(c.cum)-1]
	lo, hi := 0, len(c.cum)-1
	for lo < hi {
		m := (lo + hi) / 2
		if c.cum[m] > x {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return c.values[lo]
}

// Mix draws from one of several distributions, chosen by weight: for example
// response sizes that are mostly a few KB with 2% around 1 MB.
type Mix[T Number] struct {
	c Choice[Dist[T]]
}

// NewMix returns a mixture of the weighted distributions.
func NewMix[T Number](parts ...Weighted[Dist[T]]) (Mix[T], error) {
	c, err := NewChoice(parts...)
	if err != nil {
		return Mix[T]{}, fmt.Errorf("mix: %w", err)
	}
	return Mix[T]{c: c}, nil
}

// Sample draws one value.
func (m Mix[T]) Sample(r *rand.Rand) T { return m.c.Pick(r).Sample(r) }

// Seconds converts a float number of seconds to a time.Duration: Seconds(1.5)
// is 1.5 s.
func Seconds(seconds float64) time.Duration { return time.Duration(seconds * float64(time.Second)) }
