package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// plot draws, for the result's busiest kind, p50/p95/p99 latency (left
// axis, log scale) and throughput (right axis) against the step level.
func plot(args []string, stdout io.Writer) error {
	fl := flag.NewFlagSet("plot", flag.ContinueOnError)
	out := fl.String("o", "", "SVG file to write (default stdout)")
	kind := fl.String("kind", "", "request kind to plot (default the busiest)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() != 1 {
		return fmt.Errorf("give one result file: headroom plot -o out.svg RESULT.json")
	}
	res, err := loadtest.ReadResult(fl.Arg(0))
	if err != nil {
		return err
	}
	k := *kind
	if k == "" {
		k = busiest(res)
	}
	svg, err := svgPlot(res, k)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = io.WriteString(stdout, svg)
		return err
	}
	return os.WriteFile(*out, []byte(svg), 0o644)
}

func busiest(res *loadtest.Result) string {
	best, n := "", int64(-1)
	for _, name := range res.Kinds() {
		var total int64
		for _, s := range res.Steps {
			if k := s.Kind(name); k != nil {
				total += k.Total()
			}
		}
		if total > n {
			best, n = name, total
		}
	}
	return best
}

func svgPlot(res *loadtest.Result, kind string) (string, error) {
	type point struct {
		level, tput   float64
		p50, p95, p99 time.Duration
		verdict       loadtest.Verdict
	}
	var pts []point
	for _, s := range res.Steps {
		k := s.Kind(kind)
		if k == nil || k.Answered() == 0 {
			continue
		}
		pts = append(pts, point{s.Step.Level, s.Throughput, k.Latency.P50, k.Latency.P95, k.Latency.P99, s.Verdict})
	}
	if len(pts) == 0 {
		return "", fmt.Errorf("no step has answered %q requests", kind)
	}
	const w, h, left, right, top, bottom = 720.0, 420.0, 70.0, 70.0, 40.0, 50.0
	minL, maxL := math.Inf(1), math.Inf(-1)
	minT, maxT := math.Inf(1), 0.0
	maxTp := 0.0
	for _, p := range pts {
		minL, maxL = math.Min(minL, p.level), math.Max(maxL, p.level)
		minT = math.Min(minT, float64(p.p50))
		maxT = math.Max(maxT, float64(p.p99))
		maxTp = math.Max(maxTp, p.tput)
	}
	if maxL == minL {
		minL, maxL = minL*0.9, maxL*1.1
	}
	lo, hi := math.Log10(math.Max(minT, 1e3)), math.Log10(math.Max(maxT, 1e4))
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi == lo {
		hi++
	}
	x := func(l float64) float64 { return left + (l-minL)/(maxL-minL)*(w-left-right) }
	y := func(d time.Duration) float64 {
		v := math.Log10(math.Max(float64(d), 1))
		return h - bottom - (v-lo)/(hi-lo)*(h-top-bottom)
	}
	yt := func(t float64) float64 { return h - bottom - t/math.Max(maxTp*1.1, 1)*(h-top-bottom) }

	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%.0f" y="20" font-size="14">%s — %s latency and throughput per step</text>`+"\n", left, xmlEscape(res.Scenario), xmlEscape(kind))
	for e := lo; e <= hi; e++ {
		d := time.Duration(math.Pow(10, e))
		p(`<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%v</text>`+"\n", left, w-right, y(d), y(d), left-6, y(d)+4, d)
	}
	for _, pt := range pts {
		p(`<text x="%.1f" y="%.0f" text-anchor="middle">%g</text>`+"\n", x(pt.level), h-bottom+18, pt.level)
		if pt.verdict != loadtest.Pass {
			p(`<text x="%.1f" y="%.0f" text-anchor="middle" fill="#c00">%s</text>`+"\n", x(pt.level), h-bottom+32, pt.verdict)
		}
	}
	unit := "arrivals/s"
	if res.Model == "users" {
		unit = "users"
	}
	p(`<text x="%.0f" y="%.0f" text-anchor="middle">level (%s)</text>`+"\n", (w-right+left)/2, h-6, unit)
	p(`<text x="%.0f" y="%.0f" text-anchor="start" fill="#2a7">ok/s (max %.1f)</text>`+"\n", w-right+6, top, maxTp)
	series := []struct {
		name  string
		color string
		get   func(point) float64
	}{
		{"p50", "#36c", func(pt point) float64 { return y(pt.p50) }},
		{"p95", "#f90", func(pt point) float64 { return y(pt.p95) }},
		{"p99", "#c33", func(pt point) float64 { return y(pt.p99) }},
		{"ok/s", "#2a7", func(pt point) float64 { return yt(pt.tput) }},
	}
	for i, s := range series {
		var path []string
		for _, pt := range pts {
			path = append(path, fmt.Sprintf("%.1f,%.1f", x(pt.level), s.get(pt)))
		}
		p(`<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.color, strings.Join(path, " "))
		p(`<text x="%.0f" y="%.0f" fill="%s">%s</text>`+"\n", left+10+float64(i)*60, top+4, s.color, s.name)
	}
	p("</svg>\n")
	return b.String(), nil
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
