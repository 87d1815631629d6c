package dist

import (
	"math"
	"math/rand/v2"
)

// A modeled user that pauses between actions for gaps drawn from a
// distribution is a renewal process. Started all at once, a population of
// such users is in phase: each begins at the start of a gap (or worse,
// inside a burst), and their load surges, then decays over several gaps —
// minutes for the gateway's bursts. To be in steady state from its first
// second, a user must start at a random instant of its own cycle: inside a
// gap drawn length-biased (a random instant falls in a long gap more often
// than in a short one), at a uniform point of it. What is left of that gap
// is the residual (the stationary excess); its mean is E[X²]/2E[X], not
// E[X]/2.

// lengthBiaser is a distribution that draws its own values length-biased:
// each value x weighted by x, the law of the gap a random instant falls in.
// Every distribution of this package is one.
type lengthBiaser[T Number] interface {
	LengthBiased(r *rand.Rand) T
}

// meaner is a distribution that knows its mean, as drawn (truncation
// included). Every distribution of this package is one.
type meaner interface {
	mean() float64
}

// LengthBiased draws from d length-biased: a value x with probability
// proportional to x times its probability under d — the length of the gap
// that a random instant of a long run of back-to-back draws falls in. The
// distributions of this package draw it exactly; for another, it is
// approximated by drawing 64 values and keeping one with probability
// proportional to its size.
func LengthBiased[T Number](d Dist[T], r *rand.Rand) T {
	if lb, ok := d.(lengthBiaser[T]); ok {
		return lb.LengthBiased(r)
	}
	var xs [64]float64
	total := 0.0
	for i := range xs {
		xs[i] = math.Max(0, float64(d.Sample(r)))
		total += xs[i]
	}
	if total == 0 {
		return 0
	}
	x := r.Float64() * total
	for _, v := range xs {
		if x < v {
			return T(v)
		}
		x -= v
	}
	return T(xs[len(xs)-1])
}

// Residual draws what is left of the gap a random instant falls in, in a
// long run of back-to-back gaps drawn from d: the first gap of a user that
// starts at a random point of its cycle, so that a population started at
// once is in steady state at once. It is a uniform fraction of a
// length-biased draw (see [LengthBiased]); for an exponential d it is d
// itself (no memory).
func Residual[T Number](d Dist[T], r *rand.Rand) T {
	return T(r.Float64() * float64(LengthBiased(d, r)))
}

// Mean returns the mean of d's draws, in d's unit. The distributions of
// this package compute it (truncation and clamping included); for another,
// it is estimated from 4096 draws of a fixed seed.
func Mean[T Number](d Dist[T]) float64 {
	if m, ok := d.(meaner); ok {
		return m.mean()
	}
	r := New(0x6d65616e, 0)
	sum := 0.0
	const n = 4096
	for range n {
		sum += float64(d.Sample(r))
	}
	return sum / n
}

// linearBiased draws a value in [a, b] with density proportional to x:
// the length-biased law of a uniform draw on [a, b].
func linearBiased(a, b float64, r *rand.Rand) float64 {
	if b <= a {
		return a
	}
	return math.Sqrt(a*a + r.Float64()*(b*b-a*a))
}

// LengthBiased draws a value length-biased (see the package's LengthBiased).
func (f Fixed[T]) LengthBiased(r *rand.Rand) T {
	if f.Jitter == 0 {
		return f.Value
	}
	// The draws clamped to zero have no length: what remains is uniform
	// on [max(0, v−j), v+j].
	v, j := float64(f.Value), float64(f.Jitter)
	return T(linearBiased(math.Max(0, v-j), v+j, r))
}

func (f Fixed[T]) mean() float64 {
	v, j := float64(f.Value), float64(f.Jitter)
	if v >= j {
		return v
	}
	b := v + j // a share (j−v)/2j of the draws is clamped to zero
	return b * b / (4 * j)
}

// LengthBiased draws a value length-biased (see the package's LengthBiased).
func (u Uniform[T]) LengthBiased(r *rand.Rand) T {
	return T(linearBiased(float64(u.Min), float64(u.Max), r))
}

func (u Uniform[T]) mean() float64 { return (float64(u.Min) + float64(u.Max)) / 2 }

// LengthBiased draws a value length-biased (see the package's LengthBiased):
// a gamma of shape 2, or with a Cap, the cap itself for the draws it clamps
// and the gamma below it.
func (e Exponential[T]) LengthBiased(r *rand.Rand) T {
	m, c := float64(e.Mean), float64(e.Cap)
	if c <= 0 {
		return T(m * (r.ExpFloat64() + r.ExpFloat64()))
	}
	if r.Float64() < c*math.Exp(-c/m)/e.mean() {
		return e.Cap
	}
	// The gamma of shape 2 below c: drawn whole and retried when c is far
	// out, else from a uniform on [0, c) under the density's peak.
	if c > 4*m {
		for {
			if x := m * (r.ExpFloat64() + r.ExpFloat64()); x < c {
				return T(x)
			}
		}
	}
	top := math.Min(m, c)
	peak := top * math.Exp(-top/m)
	for {
		x := r.Float64() * c
		if r.Float64()*peak <= x*math.Exp(-x/m) {
			return T(x)
		}
	}
}

func (e Exponential[T]) mean() float64 {
	m, c := float64(e.Mean), float64(e.Cap)
	if c <= 0 {
		return m
	}
	return m * (1 - math.Exp(-c/m))
}

// normCDF is the standard normal CDF.
func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// LengthBiased draws a value length-biased (see the package's LengthBiased):
// the log-normal of parameters Mu+Sigma² and Sigma, or with a Cap, the cap
// itself for the draws it clamps and that log-normal below it.
func (l LogNormal[T]) LengthBiased(r *rand.Rand) T {
	mu := l.Mu + l.Sigma*l.Sigma
	if l.Cap <= 0 {
		return T(math.Exp(mu + l.Sigma*r.NormFloat64()))
	}
	c := float64(l.Cap)
	lc := math.Log(c)
	if r.Float64() < c*(1-normCDF((lc-l.Mu)/l.Sigma))/l.mean() {
		return l.Cap
	}
	// Below the cap, by inversion of the shifted log-normal's CDF.
	p := r.Float64() * normCDF((lc-mu)/l.Sigma)
	return T(math.Min(c, math.Exp(mu+l.Sigma*normQuantile(p))))
}

func (l LogNormal[T]) mean() float64 {
	full := math.Exp(l.Mu + l.Sigma*l.Sigma/2)
	if l.Cap <= 0 {
		return full
	}
	c := float64(l.Cap)
	lc := math.Log(c)
	return full*normCDF((lc-l.Mu-l.Sigma*l.Sigma)/l.Sigma) + c*(1-normCDF((lc-l.Mu)/l.Sigma))
}

// LengthBiased draws a value length-biased (see the package's
// LengthBiased): a part chosen with probability proportional to its weight
// times its mean, then drawn length-biased.
func (m Mix[T]) LengthBiased(r *rand.Rand) T {
	size := func(i int) float64 { return m.c.weight(i) * Mean(m.c.values[i]) }
	total := 0.0
	for i := range m.c.values {
		total += size(i)
	}
	x := r.Float64() * total
	last := len(m.c.values) - 1
	for i := range last {
		s := size(i)
		if x < s {
			return LengthBiased(m.c.values[i], r)
		}
		x -= s
	}
	return LengthBiased(m.c.values[last], r)
}

func (m Mix[T]) mean() float64 {
	sum, total := 0.0, 0.0
	for i, d := range m.c.values {
		w := m.c.weight(i)
		sum += w * Mean(d)
		total += w
	}
	return sum / total
}

// weight returns option i's weight.
func (c Choice[V]) weight(i int) float64 {
	if i == 0 {
		return c.cum[0]
	}
	return c.cum[i] - c.cum[i-1]
}
