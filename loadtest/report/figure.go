// Package report renders a load-test result as plots (SVG and PNG, drawn
// with gonum.org/v1/plot), as one self-contained HTML page, and indexes a
// directory of results.
//
// Registering its HTML writer in a TestMain,
//
//	func TestMain(m *testing.M) {
//		loadtest.RegisterWriter("html", report.WriteHTML)
//		fixtures.Main(m)
//	}
//
// makes every loadtest.Test of the binary leave <base>.html beside its
// <base>.json, rewritten after every step.
package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure is one plot of a result, with its legend drawn beside the plot
// area (never over the data, never cut off).
type Figure struct {
	// Name identifies the figure: "latency", "throughput", "knee",
	// "timeline-rates", "timeline-latency", "timeline-errors",
	// "resources-<component>-<unit>", "delays-<kind>".
	Name string
	// Plot is the plot, titled and with labelled axes.
	Plot *plot.Plot
	// Legend lists the plot's series; drawn to the right of the plot.
	Legend plot.Legend
	// W and H are the figure's size.
	W, H vg.Length
}

// Default figure size.
const (
	defaultW = 19 * vg.Centimeter
	defaultH = 10 * vg.Centimeter
)

// SVG renders the figure as an SVG document.
func (f *Figure) SVG() ([]byte, error) { return f.render("svg") }

// PNG renders the figure as a PNG image.
func (f *Figure) PNG() ([]byte, error) { return f.render("png") }

// Render renders the figure in format: "svg" or "png".
func (f *Figure) Render(format string) ([]byte, error) {
	switch format {
	case "svg", "png":
		return f.render(format)
	}
	return nil, fmt.Errorf("report: format %q: give svg or png", format)
}

func (f *Figure) render(format string) (out []byte, err error) {
	defer func() {
		// gonum panics on some degenerate data (a log axis without a
		// positive value); a report must not take the test down with it.
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("report: figure %s: %v", f.Name, r)
		}
	}()
	w, h := f.W, f.H
	if w == 0 {
		w = defaultW
	}
	if h == 0 {
		h = defaultH
	}
	// A long legend makes the figure taller rather than run off its foot.
	if need := f.Legend.Rectangle(draw.Canvas{}).Size().Y + 12*vg.Millimeter; need > h {
		h = need
	}
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(c)
	plotC, legC, ok := f.areas(dc)
	if ok {
		f.Legend.Draw(legC)
	}
	f.Plot.Draw(plotC)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// areas splits the figure's canvas into the plot's area and the legend's
// strip to its right, below the title; ok is false without a legend.
func (f *Figure) areas(dc draw.Canvas) (plotC, legC draw.Canvas, ok bool) {
	legW := f.Legend.Rectangle(dc).Size().X
	if legW <= 0 {
		return dc, dc, false
	}
	pad := 3 * vg.Millimeter
	legW += pad
	plotC = draw.Crop(dc, 0, -legW, 0, 0)
	top := vg.Length(0)
	if f.Plot.Title.Text != "" {
		top = -f.Plot.Title.TextStyle.Rectangle(f.Plot.Title.Text).Size().Y - f.Plot.Title.Padding
	}
	legC = draw.Crop(dc, dc.Size().X-legW+pad/2, 0, 0, top)
	return plotC, legC, true
}

// inlineSVG renders the figure as SVG fit for inlining into HTML: without
// the XML prolog, the generator comment and the namespace declarations,
// which HTML does not need.
func (f *Figure) inlineSVG() ([]byte, error) {
	b, err := f.SVG()
	if err != nil {
		return nil, err
	}
	if i := bytes.Index(b, []byte("<svg")); i >= 0 {
		b = b[i:]
	}
	b = bytes.Replace(b, []byte(`xmlns="http://www.w3.org/2000/svg"`), nil, 1)
	b = bytes.Replace(b, []byte(`xmlns:xlink="http://www.w3.org/1999/xlink"`), nil, 1)
	return b, nil
}

var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot in the report's style: sans-serif text, a grid,
// the title and axis labels given.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = withSize(sans, 12)
	p.Title.Padding = 3 * vg.Millimeter
	p.X.Label.Text, p.Y.Label.Text = x, y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = withSize(sans, 10)
		a.Tick.Label.Font = withSize(sans, 9)
		a.Padding = 2 * vg.Millimeter
	}
	p.X.Tick.Marker = shortTicks{}
	p.Y.Tick.Marker = shortTicks{}
	g := plotter.NewGrid()
	g.Vertical.Color = color.Gray{Y: 225}
	g.Horizontal.Color = color.Gray{Y: 225}
	p.Add(g)
	return p
}

// newLegend returns a legend in the report's style, drawn top left of the
// strip it is given.
func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle.Font = withSize(sans, 9)
	l.Top, l.Left = true, true
	l.Padding = 1 * vg.Millimeter
	return l
}

func withSize(f font.Font, size vg.Length) font.Font {
	f.Size = size
	return f
}

// The palette: one colour per series of a plot, p50/p95/p99 always the
// first three.
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, // blue
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, // orange
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, // red
	color.RGBA{0x2c, 0xa0, 0x2c, 0xff}, // green
	color.RGBA{0x94, 0x67, 0xbd, 0xff}, // purple
	color.RGBA{0x8c, 0x56, 0x4b, 0xff}, // brown
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, // pink
	color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, // grey
	color.RGBA{0xbc, 0xbd, 0x22, 0xff}, // olive
	color.RGBA{0x17, 0xbe, 0xcf, 0xff}, // cyan
}

func colour(i int) color.Color { return palette[i%len(palette)] }

var (
	green  = color.RGBA{0x2c, 0xa0, 0x2c, 0xff}
	red    = color.RGBA{0xd6, 0x27, 0x28, 0xff}
	orange = color.RGBA{0xff, 0x7f, 0x0e, 0xff}
	grey   = color.RGBA{0x7f, 0x7f, 0x7f, 0xff}
	dashed = []vg.Length{vg.Points(5), vg.Points(3)}
	dotted = []vg.Length{vg.Points(1.5), vg.Points(2)}
)

// line returns a line through xys in colour c, dashed when dash is given,
// with its points marked when marks.
func line(xys plotter.XYs, c color.Color, dash []vg.Length, marks bool) (*plotter.Line, *plotter.Scatter) {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return nil, nil
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	l.Dashes = dash
	if !marks {
		return l, nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return l, nil
	}
	s.Color = c
	s.Radius = vg.Points(2.5)
	s.Shape = draw.CircleGlyph{}
	return l, s
}

// addSeries adds a line (and its marks) to p and its legend entry to leg,
// splitting it at NaN values so that a window without samples leaves a
// gap; nothing is added when there is no point.
func addSeries(p *plot.Plot, leg *plot.Legend, name string, xys plotter.XYs, c color.Color, dash []vg.Length, marks bool) bool {
	var first plot.Thumbnailer
	var seg plotter.XYs
	flush := func() {
		if len(seg) == 0 {
			return
		}
		l, s := line(seg, c, dash, marks || len(seg) == 1)
		if l != nil {
			if len(seg) > 1 {
				p.Add(l)
			}
			if first == nil {
				first = l
			}
		}
		if s != nil {
			p.Add(s)
		}
		seg = nil
	}
	for _, xy := range xys {
		if math.IsNaN(xy.Y) || math.IsInf(xy.Y, 0) || math.IsNaN(xy.X) {
			flush()
			continue
		}
		seg = append(seg, xy)
	}
	flush()
	if first == nil {
		return false
	}
	if leg != nil {
		leg.Add(name, first)
	}
	return true
}

// vline is a vertical line across the whole plot at X.
type vline struct {
	X     float64
	Color color.Color
	Dash  []vg.Length
	Width vg.Length
}

func (v vline) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	c.SetColor(v.Color)
	c.SetLineWidth(v.Width)
	c.SetLineDash(v.Dash, 0)
	xx := x(v.X)
	var path vg.Path
	path.Move(vg.Point{X: xx, Y: c.Min.Y})
	path.Line(vg.Point{X: xx, Y: c.Max.Y})
	c.Stroke(path)
}

func (v vline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return v.X, v.X, math.Inf(1), math.Inf(-1)
}

// Thumbnail draws the line's legend entry: a vertical stroke.
func (v vline) Thumbnail(c *draw.Canvas) {
	c.SetColor(v.Color)
	c.SetLineWidth(v.Width)
	c.SetLineDash(v.Dash, 0)
	mid := (c.Min.X + c.Max.X) / 2
	var path vg.Path
	path.Move(vg.Point{X: mid, Y: c.Min.Y})
	path.Line(vg.Point{X: mid, Y: c.Max.Y})
	c.Stroke(path)
}

// hline is a horizontal line across the whole plot at Y.
type hline struct {
	Y     float64
	Color color.Color
	Dash  []vg.Length
	Width vg.Length
}

func (h hline) Plot(c draw.Canvas, p *plot.Plot) {
	_, y := p.Transforms(&c)
	c.SetColor(h.Color)
	c.SetLineWidth(h.Width)
	c.SetLineDash(h.Dash, 0)
	yy := y(h.Y)
	var path vg.Path
	path.Move(vg.Point{X: c.Min.X, Y: yy})
	path.Line(vg.Point{X: c.Max.X, Y: yy})
	c.Stroke(path)
}

func (h hline) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), h.Y, h.Y
}

func (h hline) Thumbnail(c *draw.Canvas) {
	c.SetColor(h.Color)
	c.SetLineWidth(h.Width)
	c.SetLineDash(h.Dash, 0)
	mid := (c.Min.Y + c.Max.Y) / 2
	var path vg.Path
	path.Move(vg.Point{X: c.Min.X, Y: mid})
	path.Line(vg.Point{X: c.Max.X, Y: mid})
	c.Stroke(path)
}

// band shades the whole height of the plot between From and To.
type band struct {
	From, To float64
	Color    color.Color
}

func (b band) Plot(c draw.Canvas, p *plot.Plot) {
	x, _ := p.Transforms(&c)
	x0, x1 := x(b.From), x(b.To)
	x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
	if x1 <= x0 {
		return
	}
	c.SetColor(b.Color)
	c.Fill(vg.Rectangle{Min: vg.Point{X: x0, Y: c.Min.Y}, Max: vg.Point{X: x1, Y: c.Max.Y}}.Path())
}

func (b band) DataRange() (xmin, xmax, ymin, ymax float64) {
	return b.From, b.To, math.Inf(1), math.Inf(-1)
}

func (b band) Thumbnail(c *draw.Canvas) {
	c.SetColor(b.Color)
	c.Fill(c.Rectangle.Path())
}

// faultBand shades, like band, the time a fault was applied, and names
// it in small text at the band's top left, Row lines down so that the
// names of faults close in time do not overlap.
type faultBand struct {
	band
	Name string
	Row  int
}

// faultLabel is the style of a fault band's name.
var faultLabel = draw.TextStyle{Color: color.RGBA{0x9b, 0x1c, 0x1c, 0xff}, Font: withSize(sans, 7),
	XAlign: draw.XLeft, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}

func (b faultBand) Plot(c draw.Canvas, p *plot.Plot) {
	b.band.Plot(c, p)
	x, _ := p.Transforms(&c)
	x0 := max(x(b.From), c.Min.X)
	if b.Name == "" || x0 >= c.Max.X || x(b.To) <= c.Min.X {
		return
	}
	pad := vg.Points(2)
	pt := vg.Point{X: x0 + pad, Y: c.Max.Y - pad - vg.Length(b.Row)*faultLabel.Height(b.Name)}
	if w := faultLabel.Width(b.Name); pt.X+w > c.Max.X { // near the right edge: end there
		pt.X = max(c.Max.X-pad-w, c.Min.X)
	}
	c.FillText(faultLabel, pt, b.Name)
}

// logTicks marks a log axis at 1, 2 and 5 times each power of ten, labels
// formatted by label; within less than a decade the minor marks carry
// labels too.
type logTicks struct{ label func(float64) string }

func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 || math.IsNaN(lo) || math.IsNaN(hi) {
		return nil
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi*1.0001; e++ {
		base := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			v := base * float64(m)
			if v < lo*0.9999 || v > hi*1.0001 {
				continue
			}
			tk := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				tk.Label = t.label(v)
			}
			ticks = append(ticks, tk)
		}
	}
	labelled := 0
	for _, tk := range ticks {
		if tk.Label != "" {
			labelled++
		}
	}
	if labelled < 2 {
		for i := range ticks {
			ticks[i].Label = t.label(ticks[i].Value)
		}
	}
	return ticks
}

// shortTicks are gonum's default ticks labelled shortly: "250", not
// "250.00".
type shortTicks struct{}

func (shortTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = num(ticks[i].Value)
		}
	}
	return ticks
}

// setLogY makes p's y axis logarithmic when every value is positive,
// widening a narrow range to at least a factor of 4 around its values.
func setLogY(p *plot.Plot, label func(float64) string) {
	if !(p.Y.Min > 0) || math.IsInf(p.Y.Min, 0) || math.IsInf(p.Y.Max, 0) {
		return
	}
	if p.Y.Max/p.Y.Min < 4 {
		mid := math.Sqrt(p.Y.Max * p.Y.Min)
		p.Y.Min, p.Y.Max = mid/2, mid*2
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{label}
}

// num formats a tick value shortly: "0.5", "20", "1500".
func num(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// fromZero makes p's y axis start at zero when its values are positive.
func fromZero(p *plot.Plot) {
	if p.Y.Min > 0 {
		p.Y.Min = 0
	}
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1
	}
}

// slug makes s fit in a figure's name.
func slug(s string) string {
	s = regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(strings.ToLower(s), "-")
	return strings.Trim(s, "-")
}
