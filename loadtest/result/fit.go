package result

import (
	"errors"
	"fmt"
	"math"

	"github.com/aclements/go-moremath/stats"
)

// Line is a straight line fitted to points by least squares, with the
// spread of its slope: what a quantity costs per unit of another, e.g.
// a server's memory per held stream over a ladder of stream counts.
type Line struct {
	// Slope and Intercept: y ≈ Intercept + Slope·x.
	Slope     float64 `json:"slope"`
	Intercept float64 `json:"intercept"`
	// SlopeLow and SlopeHigh bound the slope's 95% confidence interval
	// (Student's t with N-2 degrees of freedom); equal to Slope when the
	// points lie exactly on the line, infinite with two points.
	SlopeLow  float64 `json:"slope_low"`
	SlopeHigh float64 `json:"slope_high"`
	// R2 is the share of y's variance the line explains.
	R2 float64 `json:"r2"`
	// N is the number of points.
	N int `json:"n"`
}

// FitLine fits y ≈ a + b·x by ordinary least squares. It needs at least
// two points with distinct xs.
func FitLine(xs, ys []float64) (Line, error) {
	n := len(xs)
	if n != len(ys) {
		return Line{}, fmt.Errorf("loadtest: FitLine got %d xs and %d ys; give one y per x", n, len(ys))
	}
	if n < 2 {
		return Line{}, errors.New("loadtest: FitLine needs at least two points")
	}
	var mx, my float64
	for i := range xs {
		mx += xs[i]
		my += ys[i]
	}
	mx, my = mx/float64(n), my/float64(n)
	var sxx, sxy, syy float64
	for i := range xs {
		dx, dy := xs[i]-mx, ys[i]-my
		sxx += dx * dx
		sxy += dx * dy
		syy += dy * dy
	}
	if sxx == 0 {
		return Line{}, errors.New("loadtest: FitLine needs at least two distinct xs")
	}
	l := Line{Slope: sxy / sxx, N: n}
	l.Intercept = my - l.Slope*mx
	var sse float64
	for i := range xs {
		r := ys[i] - (l.Intercept + l.Slope*xs[i])
		sse += r * r
	}
	l.R2 = 1
	if syy > 0 {
		l.R2 = 1 - sse/syy
	}
	half := math.Inf(1)
	if n > 2 {
		se := math.Sqrt(sse / float64(n-2) / sxx)
		half = stats.InvCDF(stats.TDist{V: float64(n - 2)})(0.975) * se
	}
	l.SlopeLow, l.SlopeHigh = l.Slope-half, l.Slope+half
	if half == 0 || math.IsNaN(half) {
		l.SlopeLow, l.SlopeHigh = l.Slope, l.Slope
	}
	return l, nil
}
