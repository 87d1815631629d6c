package result

import (
	"fmt"
	"math"

	"github.com/aclements/go-moremath/stats"
	"github.com/docker/go-units"
)

// Growth is one series fitted over a soak's hold (a step with Soak set):
// how fast a component's memory, or a target's goroutines, grew once the
// hold was past its warm-up, and whether that growth is a leak the run is
// sure of.
//
// The fit: the hold's first third is warm-up (caches filling, pools
// growing, the heap finding its size) and is left out; the rest is cut
// into GrowthWindows windows (fewer on a short hold, at least
// MinGrowthWindows of two samples or more), each window's samples are
// averaged — a window mean is far less tied to its neighbour than a
// sample is, and it smooths the garbage collector's sawtooth — and a
// straight line is fitted to the window means, with its slope's 95%
// interval, widened for the window means' serial correlation (see
// serialSlopeBounds). A leak is growth that is (1) sure: the interval's
// low end above zero; (2) material: the fitted growth over the fit at
// least GrowthShare of where it began and at least the unit's floor (1
// MiB, 25 goroutines) and, for memory, surely at least Matters an hour
// when that is set (Step.LeakMatters); and (3) not flattening: the fit's
// last half is not surely growing at under half the whole's rate, as a
// warm-up curve's does and a leak's does not.
type Growth struct {
	Component string `json:"component"`
	Metric    string `json:"metric"`
	Unit      string `json:"unit"`
	// From and To bound the fit, in seconds since the hold began.
	From float64 `json:"from_s"`
	To   float64 `json:"to_s"`
	// Windows is the number of window means fitted.
	Windows int `json:"windows"`
	// Start and End are the fitted line's values at From and To.
	Start float64 `json:"start"`
	End   float64 `json:"end"`
	// PerHour is the slope in Unit per hour, PerHourLow and PerHourHigh
	// its 95% interval.
	PerHour     float64 `json:"per_hour"`
	PerHourLow  float64 `json:"per_hour_low"`
	PerHourHigh float64 `json:"per_hour_high"`
	// Unbounded says the windows were too few and too alike (serially
	// correlated) to bound the slope: no growth is sure, and PerHourLow
	// and PerHourHigh stand at PerHour.
	Unbounded bool `json:"unbounded,omitempty"`
	// LateRatio is the slope of the fit's last half over the whole's: near
	// 1 for growth that goes on, near 0 (or below) for a curve that
	// flattens.
	LateRatio float64 `json:"late_ratio"`
	// Limit is the series' limit (a container's memory limit), 0 when none.
	Limit float64 `json:"limit,omitempty"`
	// Matters is, for a memory series, the slowest growth per hour that
	// is a leak (Step.LeakMatters); 0 when any sure growth is.
	Matters float64 `json:"matters_per_h,omitempty"`
	// Leak says the growth is a leak by the three tests above; Judged, that
	// the run fails on it (the target's and the system's services'; a
	// database's memory grows with its data and its cache, by design, and
	// is reported only).
	Leak   bool `json:"leak,omitempty"`
	Judged bool `json:"judged,omitempty"`

	flattens bool // the last half's slope is surely under half the whole's
}

// Fit parameters of Growth.
const (
	GrowthWindows    = 12
	MinGrowthWindows = 6
	GrowthShare      = 0.05
)

// growthFloor is the least growth over a fit that can be a leak, by unit.
func growthFloor(unit string) float64 {
	switch unit {
	case "bytes":
		return 1 << 20
	case "count":
		return 25
	}
	return 0
}

// FitGrowth fits the samples (ts in seconds since the hold began, vs their
// values) of a hold of hold seconds as Growth says. ok is false when the
// fit has fewer than MinGrowthWindows windows of two samples: the hold was
// too short for its sampling interval.
func FitGrowth(ts, vs []float64, hold float64) (g Growth, ok bool) {
	from, to := hold/3, hold
	var t, v []float64
	for i := range ts {
		if ts[i] >= from && ts[i] <= to {
			t, v = append(t, ts[i]), append(v, vs[i])
		}
	}
	w := min(GrowthWindows, len(t)/2)
	if w < MinGrowthWindows {
		return Growth{}, false
	}
	// Window means, by sample count: each window holds len(t)/w samples
	// (the first ones one more when it does not divide).
	var mx, my []float64
	for i, j := 0, 0; i < w; i++ {
		n := len(t) / w
		if i < len(t)%w {
			n++
		}
		var st, sv float64
		for _, k := range t[j : j+n] {
			st += k
		}
		for _, k := range v[j : j+n] {
			sv += k
		}
		mx, my = append(mx, st/float64(n)), append(my, sv/float64(n))
		j += n
	}
	line, err := FitLine(mx, my)
	if err != nil {
		return Growth{}, false
	}
	lo, hi := serialSlopeBounds(mx, my, line)
	unbounded := math.IsInf(lo, 0) || math.IsInf(hi, 0)
	if unbounded {
		lo, hi = line.Slope, line.Slope // JSON has no infinity: see Unbounded
	}
	g = Growth{From: from, To: to, Windows: w,
		Start: line.Intercept + line.Slope*from, End: line.Intercept + line.Slope*to,
		PerHour: line.Slope * 3600, PerHourLow: lo * 3600, PerHourHigh: hi * 3600, Unbounded: unbounded}
	if late, err := FitLine(mx[w/2:], my[w/2:]); err == nil && line.Slope != 0 {
		g.LateRatio = late.Slope / line.Slope
		_, lateHi := serialSlopeBounds(mx[w/2:], my[w/2:], late)
		g.flattens = lateHi < line.Slope/2
	}
	return g, true
}

// serialSlopeBounds is the 95% interval of line's slope fitted to xs, ys
// with its residuals' serial correlation allowed for: a window mean of a
// memory series wanders with its neighbours, and an interval that took
// them for independent would be too narrow (a steady series read as
// growing). The residuals' lag-1 correlation r shrinks the points to an
// effective n(1−r)/(1+r), as climate trends are tested (Santer et al.,
// 2000).
func serialSlopeBounds(xs, ys []float64, line Line) (lo, hi float64) {
	n := len(xs)
	res := make([]float64, n)
	var mx float64
	for i := range xs {
		res[i] = ys[i] - (line.Intercept + line.Slope*xs[i])
		mx += xs[i]
	}
	mx /= float64(n)
	var sse, lag, sxx float64
	for i := range res {
		sse += res[i] * res[i]
		sxx += (xs[i] - mx) * (xs[i] - mx)
		if i > 0 {
			lag += res[i] * res[i-1]
		}
	}
	// r is capped at 0.5 (no fewer than a third of the points' worth): from
	// a dozen points a higher estimate says more about the line's misfit
	// (a curve, or a leak's steps that are too regular) than about the
	// wander, and would make a leak as plain as a ruled line unsure.
	r := 0.0
	if sse > 0 {
		r = min(0.5, max(0, lag/sse))
	}
	eff := float64(n) * (1 - r) / (1 + r)
	if eff <= 3 || sxx == 0 {
		return math.Inf(-1), math.Inf(1)
	}
	if sse == 0 {
		return line.Slope, line.Slope
	}
	se := math.Sqrt(sse / (eff - 2) / sxx)
	half := stats.InvCDF(stats.TDist{V: eff - 2})(0.975) * se
	return line.Slope - half, line.Slope + half
}

// judge sets Leak by the three tests.
func (g *Growth) judge() {
	grew := g.End - g.Start
	g.Leak = !g.Unbounded && g.PerHourLow > 0 && grew >= GrowthShare*math.Abs(g.Start) && grew >= growthFloor(g.Unit) &&
		!g.tooSlow() && !g.flattens
}

// tooSlow says a memory series is not surely growing as fast as Matters.
func (g *Growth) tooSlow() bool {
	return g.Unit == "bytes" && g.Matters > 0 && g.PerHourLow < g.Matters
}

// MattersAt returns g judged again with the slowest memory growth that
// is a leak at perHour (bytes per hour; 0: any sure growth past the
// floors). Other units are judged as before.
func (g Growth) MattersAt(perHour float64) Growth {
	if g.Unit == "bytes" {
		g.Matters = perHour
		g.judge()
	}
	return g
}

// NewGrowth fits a series (see FitGrowth) and judges it; ok is false when
// the hold was too short to fit.
func NewGrowth(component, metric, unit string, limit float64, ts, vs []float64, hold float64) (Growth, bool) {
	g, ok := FitGrowth(ts, vs, hold)
	if !ok {
		return Growth{}, false
	}
	g.Component, g.Metric, g.Unit, g.Limit = component, metric, unit, limit
	g.judge()
	return g, true
}

// Name is "relay memory".
func (g Growth) Name() string { return g.Component + " " + g.Metric }

// quantity formats x in the series' unit.
func (g Growth) quantity(x float64) string {
	if g.Unit == "bytes" {
		if x < 0 {
			return "−" + units.BytesSize(-x)
		}
		return units.BytesSize(x)
	}
	return fmt.Sprintf("%.3g", x)
}

// Rate is "+41MiB/h (95% interval 35MiB–47MiB)".
func (g Growth) Rate() string {
	sign := "+"
	if g.PerHour < 0 {
		sign = ""
	}
	if g.Unbounded {
		return fmt.Sprintf("%s%s/h (no interval: too few independent windows)", sign, g.quantity(g.PerHour))
	}
	return fmt.Sprintf("%s%s/h (95%% interval %s to %s)", sign, g.quantity(g.PerHour), g.quantity(g.PerHourLow), g.quantity(g.PerHourHigh))
}

// Day is where the series would be after a working day (8 h) of the
// hold's growth, and when it would reach its limit; "" for a series not
// surely growing.
func (g Growth) Day() string {
	if g.Unbounded || g.PerHourLow <= 0 {
		return ""
	}
	s := fmt.Sprintf("%s after a working day (8 h) at this rate", g.quantity(g.End+8*g.PerHour))
	if g.Limit > 0 && g.End < g.Limit {
		s += fmt.Sprintf("; its %s limit in %.1f h", g.quantity(g.Limit), (g.Limit-g.End)/g.PerHour)
	}
	return s
}

// String describes the fit: "relay memory grew +41MiB/h (95% interval …)
// over the hold's last 40s, 120MiB to 161MiB: a leak".
func (g Growth) String() string {
	verdict := "steady"
	switch {
	case g.Leak:
		verdict = "a leak"
	case g.Unbounded:
	case g.PerHourLow > 0 && g.flattens:
		verdict = "grew, then flattened (warm-up, not a leak)"
	case g.PerHourLow > 0 && g.tooSlow():
		verdict = fmt.Sprintf("grew, not surely as fast as the %s/h that matters", g.quantity(g.Matters))
	case g.PerHourLow > 0:
		verdict = "grew, too little to call a leak"
	}
	return fmt.Sprintf("%s: %s over the hold's last %.0fs, %s to %s: %s", g.Name(), g.Rate(), g.To-g.From,
		g.quantity(g.Start), g.quantity(g.End), verdict)
}
