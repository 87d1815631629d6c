package changepoint

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Defaults taken by the zero fields of [Options]. The package comment says
// why these values.
const (
	DefaultAlpha        = 0.005
	DefaultPermutations = 999
	DefaultMinSize      = 3
	DefaultTrendAlpha   = 0.01
	DefaultMinSlope     = 0.01
	DefaultMinTrend     = 5
	DefaultSeed         = 0x6865_6164_726f_6f6d // "headroom"
)

// Options tune [Analyze]. A zero field takes its default (the Default
// constants); a field therefore cannot be set to zero: set MinSlope to a
// tiny positive value, such as 1e-9, to report every significant trend.
type Options struct {
	// Alpha is the significance level of each change-point test: a split
	// is accepted when its permutation p-value is at most Alpha. It is the
	// chance that a series without any change shows one (see the package
	// comment for the measured rate). Default 0.005.
	Alpha float64
	// Permutations is the number of random permutations of a segment that
	// its split is judged against (R). The smallest p-value is 1/(R+1), so
	// R must be at least 1/Alpha - 1. Default 999.
	Permutations int
	// MinSize is the fewest points a segment may have on each side of a
	// change, at least 2. A change at one of the last MinSize-1 nights
	// cannot be reported yet. Default 3.
	MinSize int
	// TrendAlpha is the significance level of the Mann–Kendall trend test
	// of each segment between changes. Default 0.01.
	TrendAlpha float64
	// MinSlope is the smallest relative change per step (0.01 is 1% per
	// night, either way) a trend must have to be reported. Default 0.01.
	MinSlope float64
	// MinTrend is the fewest points a segment must have to be tested for a
	// trend, at least 3. Default 5.
	MinTrend int
	// Seed seeds the random permutations: one series and one Options
	// always give the same Analysis. Default DefaultSeed.
	Seed uint64
}

func (o Options) withDefaults() (Options, error) {
	if o.Alpha == 0 {
		o.Alpha = DefaultAlpha
	}
	if o.Permutations == 0 {
		o.Permutations = DefaultPermutations
	}
	if o.MinSize == 0 {
		o.MinSize = DefaultMinSize
	}
	if o.TrendAlpha == 0 {
		o.TrendAlpha = DefaultTrendAlpha
	}
	if o.MinSlope == 0 {
		o.MinSlope = DefaultMinSlope
	}
	if o.MinTrend == 0 {
		o.MinTrend = DefaultMinTrend
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	switch {
	case !(o.Alpha > 0 && o.Alpha < 1):
		return o, fmt.Errorf("changepoint: Alpha is %v; it must lie strictly between 0 and 1 (or be 0 for the default %v)", o.Alpha, DefaultAlpha)
	case o.Permutations < 0:
		return o, fmt.Errorf("changepoint: Permutations is %d; it must be positive (or 0 for the default %d)", o.Permutations, DefaultPermutations)
	case 1/float64(o.Permutations+1) > o.Alpha*(1+1e-9):
		return o, fmt.Errorf("changepoint: %d permutations cannot give a p-value as small as Alpha %v; use at least %d", o.Permutations, o.Alpha, int(math.Ceil(1/o.Alpha))-1)
	case o.MinSize < 2:
		return o, fmt.Errorf("changepoint: MinSize is %d; a segment needs at least 2 points to have a spread (or 0 for the default %d)", o.MinSize, DefaultMinSize)
	case !(o.TrendAlpha > 0 && o.TrendAlpha < 1):
		return o, fmt.Errorf("changepoint: TrendAlpha is %v; it must lie strictly between 0 and 1 (or be 0 for the default %v)", o.TrendAlpha, DefaultTrendAlpha)
	case !(o.MinSlope > 0) || math.IsInf(o.MinSlope, 1):
		return o, fmt.Errorf("changepoint: MinSlope is %v; it must be positive and finite (or 0 for the default %v)", o.MinSlope, DefaultMinSlope)
	case o.MinTrend < 3:
		return o, fmt.Errorf("changepoint: MinTrend is %d; a trend needs at least 3 points (or 0 for the default %d)", o.MinTrend, DefaultMinTrend)
	}
	return o, nil
}

// Change is an abrupt step: the series' level before Index differs from
// its level from Index on.
type Change struct {
	// Index is the first index of the new segment: the night the change
	// shows.
	Index int
	// Before and After are the medians of the segments either side of the
	// change (between it and the neighbouring changes), in the series'
	// units.
	Before, After float64
	// Ratio is After/Before.
	Ratio float64
	// P is the permutation p-value of the split.
	P float64
}

// String formats the change as "×1.31 at 12 (p=0.002)".
func (c Change) String() string {
	return fmt.Sprintf("×%.2f at %d (%s)", c.Ratio, c.Index, formatP(c.P))
}

// Trend is a monotonic drift over a segment between changes.
type Trend struct {
	// From and To are the first and last index of the segment, inclusive.
	From, To int
	// PerStep is the relative change per step (0.031 is +3.1% a night):
	// exp(s)-1 for the Theil–Sen slope s of the log values.
	PerStep float64
	// Total is the fitted ratio of the segment's end to its start:
	// (1+PerStep)^(To-From).
	Total float64
	// P is the two-sided Mann–Kendall p-value.
	P float64
}

// String formats the trend as "+3.1%/step over 3–10 (p=0.002)".
func (t Trend) String() string {
	return fmt.Sprintf("%+.1f%%/step over %d–%d (%s)", 100*t.PerStep, t.From, t.To, formatP(t.P))
}

func formatP(p float64) string {
	if p < 0.001 {
		return "p<0.001"
	}
	return fmt.Sprintf("p=%.2g", p)
}

// Analysis is what [Analyze] found in a series: its changes and the trends
// of the segments between them, both in index order.
type Analysis struct {
	Changes []Change
	Trends  []Trend
}

// ErrNotPositive is wrapped by the error of [Analyze] for a value that is
// not a positive finite number.
var ErrNotPositive = errors.New("changepoint: values must be positive and finite")

// Analyze finds the change points and the trends of series, oldest value
// first. The values must be positive and finite (the analysis is on their
// logarithms); an error names the first one that is not. A series shorter
// than 2×MinSize has no change, and a segment shorter than MinTrend no
// trend. See the package comment for the method.
func Analyze(series []float64, o Options) (Analysis, error) {
	return analyze(series, o, true)
}

// analyze is Analyze; trendCheck false turns off the step-against-line
// check, for the tests that show it matters.
func analyze(series []float64, o Options, trendCheck bool) (Analysis, error) {
	o, err := o.withDefaults()
	if err != nil {
		return Analysis{}, err
	}
	logs := make([]float64, len(series))
	for i, v := range series {
		if !(v > 0) || math.IsInf(v, 1) {
			return Analysis{}, fmt.Errorf("%w: value %d is %v; drop that night (or fix how the figure is made) before analysing the series", ErrNotPositive, i, v)
		}
		logs[i] = math.Log(v)
	}
	a := analyzer{opts: o, logs: logs, trendCheck: trendCheck}
	splits := a.segment()
	slices.SortFunc(splits, func(x, y split) int { return cmp.Compare(x.index, y.index) })

	bounds := make([]int, 0, len(splits)+2)
	bounds = append(bounds, 0)
	for _, s := range splits {
		bounds = append(bounds, s.index)
	}
	bounds = append(bounds, len(series))

	var out Analysis
	for i, s := range splits {
		before := median(series[bounds[i]:bounds[i+1]])
		after := median(series[bounds[i+1]:bounds[i+2]])
		out.Changes = append(out.Changes, Change{Index: s.index, Before: before, After: after, Ratio: after / before, P: s.p})
	}
	for i := 0; i+1 < len(bounds); i++ {
		if t, ok := a.trend(bounds[i], bounds[i+1]); ok {
			out.Trends = append(out.Trends, t)
		}
	}
	return out, nil
}

// analyzer holds one analysis' options and log values.
type analyzer struct {
	opts       Options
	logs       []float64
	trendCheck bool
}

// split is an accepted change point.
type split struct {
	index int
	p     float64
}

// Purposes of the random streams, so that every test draws its own.
const (
	streamSplit = iota + 1
	streamResidual
	streamTrend
)

// rng returns the random source of one test of the segment [start, end):
// a PCG seeded by Options.Seed, the segment and the purpose of the test,
// so that the result does not depend on the order in which segments are
// visited. The seeds go through splitmix64 so that neighbouring segments
// do not start from neighbouring states.
func (a *analyzer) rng(start, end, purpose int) *rand.Rand {
	stream := uint64(start)<<40 ^ uint64(end)<<8 ^ uint64(purpose)
	seed := splitmix64(a.opts.Seed)
	return rand.New(rand.NewPCG(seed, splitmix64(seed^stream)))
}

// splitmix64 is the finaliser of the SplitMix64 generator: a bijection of
// uint64 that scatters nearby inputs.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// segment runs binary segmentation over the whole series and returns the
// accepted splits.
func (a *analyzer) segment() []split {
	var found []split
	type span struct{ start, end int }
	todo := []span{{0, len(a.logs)}}
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if s.end-s.start < 2*a.opts.MinSize {
			continue
		}
		values := a.logs[s.start:s.end]
		tau, p, ok := permutationTest(values, a.opts, a.rng(s.start, s.end, streamSplit))
		if !ok {
			continue
		}
		if a.trendCheck {
			slope, intercept := theilSen(values)
			if lineLoss(values, slope, intercept) < stepLoss(values, tau) {
				// A straight line explains the segment better than a
				// step: look for a step on top of the line instead.
				residuals := make([]float64, len(values))
				for i, v := range values {
					residuals[i] = v - (intercept + slope*float64(i))
				}
				tau, p, ok = permutationTest(residuals, a.opts, a.rng(s.start, s.end, streamResidual))
				if !ok {
					continue
				}
			}
		}
		found = append(found, split{index: s.start + tau, p: p})
		todo = append(todo, span{s.start, s.start + tau}, span{s.start + tau, s.end})
	}
	return found
}

// trend tests the segment [start, end) for a trend and reports it when it
// is significant and steep enough.
func (a *analyzer) trend(start, end int) (Trend, bool) {
	if end-start < a.opts.MinTrend {
		return Trend{}, false
	}
	values := a.logs[start:end]
	p := mannKendall(values, a.opts.Permutations, a.rng(start, end, streamTrend))
	if p > a.opts.TrendAlpha {
		return Trend{}, false
	}
	slope, _ := theilSen(values)
	perStep := math.Expm1(slope)
	if math.Abs(perStep) < a.opts.MinSlope {
		return Trend{}, false
	}
	return Trend{From: start, To: end - 1, PerStep: perStep, Total: math.Exp(slope * float64(end-1-start)), P: p}, true
}

// stepLoss is the sum of absolute deviations of values from the median of
// their side of the split at tau.
func stepLoss(values []float64, tau int) float64 {
	return absDeviations(values[:tau]) + absDeviations(values[tau:])
}

func absDeviations(values []float64) float64 {
	m := median(values)
	sum := 0.0
	for _, v := range values {
		sum += math.Abs(v - m)
	}
	return sum
}

// lineLoss is the sum of absolute deviations of values from the line
// intercept + slope×i.
func lineLoss(values []float64, slope, intercept float64) float64 {
	sum := 0.0
	for i, v := range values {
		sum += math.Abs(v - intercept - slope*float64(i))
	}
	return sum
}

// median returns the median of values (the mean of the middle two for an
// even count) without changing values.
func median(values []float64) float64 {
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
