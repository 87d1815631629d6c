package result

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/docker/go-units"

	"github.com/headroom-dev/headroom/internal/format"
)

// Projection is where the costs measured below the knee say a component
// runs out, set against where the run found the knee: seed 000's "10–12k
// streams fit in 512 MiB", checked. For every component with a CPU or
// memory limit, its mean cores and its most memory held are fitted
// against the level over the steps that passed (an idle row included), and
// the line is followed to the limit. The resource that runs out first is
// the projected ceiling; the measured knee — the highest passing level to
// the lowest failing one — either agrees with it or says the cost is not
// linear.
type Projection struct {
	// Resources are the projections, the first to run out first.
	Resources []ResourceProjection `json:"resources"`
	// Agrees says the first projection's interval meets the measured
	// knee; Text says how, or how it does not and what that means.
	Agrees bool   `json:"agrees"`
	Text   string `json:"text"`
}

// ResourceProjection is one resource followed to its limit.
type ResourceProjection struct {
	Component string `json:"component"`
	// Metric is "cpu" (mean cores) or "memory" (the most held, bytes).
	Metric string  `json:"metric"`
	Limit  float64 `json:"limit"`
	// Fit is the line of the resource against the level.
	Fit Line `json:"fit"`
	// At is the level where the line meets the limit; AtLow and AtHigh
	// bound it by the slope's 95% interval (AtHigh 0 where the interval
	// reaches zero: unbounded; both equal to At with two points, which
	// have none). Fit's slope bounds are its own with three points or
	// more, the slope itself with two.
	At     float64 `json:"at"`
	AtLow  float64 `json:"at_low"`
	AtHigh float64 `json:"at_high"`
	// Bend is the cost per unit over the upper half of the levels against
	// the lower half's (four steps or more; 0 with fewer): near 1 for a
	// linear cost. Under 1/MaxBend or over MaxBend the line is no
	// projection — the cost falls or grows with the load.
	Bend float64 `json:"bend,omitempty"`
}

// MaxBend is how far a cost per unit may change between the lower and
// the upper half of the levels before a projection calls it non-linear.
const MaxBend = 2.0

// Name is "relay memory".
func (p ResourceProjection) Name() string { return p.Component + " " + p.Metric }

// perLevel formats the cost of one more unit of level.
func (p ResourceProjection) perLevel() string {
	if p.Metric == "memory" {
		return units.BytesSize(p.Fit.Slope)
	}
	return fmt.Sprintf("%.3g cores", p.Fit.Slope)
}

func (p ResourceProjection) limit() string {
	if p.Metric == "memory" {
		return units.BytesSize(p.Limit)
	}
	return fmt.Sprintf("%g cores", p.Limit)
}

// knownInterval reports whether the projection has an interval (three
// points or more).
func (p ResourceProjection) knownInterval() bool { return p.Fit.N > 2 }

// String is "relay memory: 212KiB per user over 3 steps, its 512MiB limit at
// 2,410 (95% interval 2,100–2,830)".
func (p ResourceProjection) String() string {
	s := fmt.Sprintf("%s: %s per unit of level over %d steps, its %s limit at %s", p.Name(), p.perLevel(), p.Fit.N, p.limit(), format.Level(math.Round(p.At)))
	if p.knownInterval() {
		s += fmt.Sprintf(" (95%% interval %s–%s)", levelOrInf(p.AtLow), levelOrInf(p.AtHigh))
	}
	return s
}

func levelOrInf(v float64) string {
	if math.IsInf(v, 1) || v == 0 {
		return "∞"
	}
	return format.Level(math.Round(v))
}

// projectionTolerance widens a projection without an interval (two
// points): a line through two steps says where a limit is met to no better
// than a knee search brackets it.
const projectionTolerance = 0.15

// Project computes the run's Projection; nil when no component has a
// limit, or fewer than two levels passed.
func (res *Result) Project() *Projection {
	type key struct{ component, metric string }
	xs := map[key][]float64{}
	ys := map[key][]float64{}
	limits := map[key]float64{}
	var order []key
	for _, s := range res.Steps {
		if s.Verdict != Pass {
			continue
		}
		for _, r := range s.Resources {
			if r.Limit <= 0 || r.Harness || r.Component == "generator" || r.Component == "host" || (r.Metric != "cpu" && r.Metric != "memory") {
				continue
			}
			k := key{r.Component, r.Metric}
			if _, ok := limits[k]; !ok {
				order = append(order, k)
			}
			limits[k] = r.Limit
			y := r.Max
			if r.Metric == "cpu" {
				y = r.Mean
			}
			xs[k], ys[k] = append(xs[k], s.Step.Level), append(ys[k], y)
		}
	}
	var ps []ResourceProjection
	for _, k := range order {
		line, err := FitLine(xs[k], ys[k])
		if err != nil || !(line.Slope > 0) {
			continue // one level, or a cost that does not grow with the load
		}
		at := func(slope float64) float64 {
			if !(slope > 0) {
				return math.Inf(1)
			}
			return (limits[k] - line.Intercept) / slope
		}
		p := ResourceProjection{Component: k.component, Metric: k.metric, Limit: limits[k], Fit: line, At: at(line.Slope),
			Bend: bend(xs[k], ys[k])}
		p.AtLow, p.AtHigh = p.At, p.At
		if p.knownInterval() {
			p.AtLow, p.AtHigh = at(line.SlopeHigh), at(line.SlopeLow)
		}
		if !p.knownInterval() {
			p.Fit.SlopeLow, p.Fit.SlopeHigh = line.Slope, line.Slope // JSON has no infinity
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return nil
	}
	slices.SortStableFunc(ps, func(a, b ResourceProjection) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	pr := &Projection{Resources: ps}
	pr.judge(res)
	for i := range pr.Resources {
		if math.IsInf(pr.Resources[i].AtHigh, 1) {
			pr.Resources[i].AtHigh = 0 // unbounded: JSON has no infinity
		}
	}
	return pr
}

// bend is the slope over the upper half of the points (by x) against the
// lower half's, each half at least two points; 0 with fewer than four
// points or a lower slope that is not positive.
func bend(xs, ys []float64) float64 {
	if len(xs) < 4 {
		return 0
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	half := func(ii []int) (Line, error) {
		var x, y []float64
		for _, i := range ii {
			x, y = append(x, xs[i]), append(y, ys[i])
		}
		return FitLine(x, y)
	}
	n := len(idx)
	lo, err1 := half(idx[:(n+1)/2])
	hi, err2 := half(idx[n/2:])
	if err1 != nil || err2 != nil || !(lo.Slope > 0) {
		return 0
	}
	return hi.Slope / lo.Slope
}

// judge sets Agrees and Text from the first projection and the measured
// knee.
func (pr *Projection) judge(res *Result) {
	p := pr.Resources[0]
	if b := p.Bend; b != 0 && (b < 1/MaxBend || b > MaxBend) {
		dir := "falls"
		if b > 1 {
			dir = "grows"
		}
		pr.Text = fmt.Sprintf("%s: the cost per unit of level %s with the load (×%.2f over the upper half of the levels against the lower half), so a line is no projection of where it runs out; the measured knee is %s.",
			p.Name(), dir, b, kneeText(res))
		return
	}
	lo, hi := p.AtLow, p.AtHigh
	if !p.knownInterval() {
		lo, hi = p.At*(1-projectionTolerance), p.At*(1+projectionTolerance)
	}
	first := fmt.Sprintf("By the costs below the knee, %s runs out first, at %s", p.Name(), levelOrInf(p.At))
	if p.knownInterval() {
		first += fmt.Sprintf(" (95%% interval %s–%s)", levelOrInf(lo), levelOrInf(hi))
	} else {
		first += fmt.Sprintf(" (a line through two steps: ±%.0f%%)", projectionTolerance*100)
	}
	first += fmt.Sprintf(" — %s a unit of level against its %s limit", p.perLevel(), p.limit())
	capacity, fail := res.Capacity, res.FirstFailure
	switch {
	case capacity == 0:
		pr.Text = first + "; no level passed to set it against."
	case hi < capacity:
		pr.Text = fmt.Sprintf("%s; yet %s passed. The cost per unit falls as the load grows (work shared between users, caches warming): the projection is conservative.", first, format.Level(capacity))
	case fail > 0 && lo > fail && p.reachedAt(res, fail):
		pr.Text = fmt.Sprintf("%s; yet it ran out at %s already (the knee: %s–%s). Its cost per unit grows near the limit (a heap's headroom, a ramp's transients): the projection is optimistic.",
			first, format.Level(fail), format.Level(capacity), format.Level(fail))
	case fail > 0 && lo > fail:
		pr.Text = fmt.Sprintf("%s; yet the knee came at %s–%s, before it. Something gave out first that the linear costs do not show: a cost that grows faster than the load (queueing, contention, a lock, a pool too small), or a resource without a limit here (the database, connections).",
			first, format.Level(capacity), format.Level(fail))
	case fail == 0:
		pr.Agrees = true
		pr.Text = fmt.Sprintf("%s; the run passed up to %s without reaching it.", first, format.Level(capacity))
	default:
		pr.Agrees = true
		pr.Text = fmt.Sprintf("%s; the measured knee, %s–%s, agrees.", first, format.Level(capacity), format.Level(fail))
	}
}

// projectionLines is the Markdown of a projection: its verdict, then
// every resource followed to its limit.
func projectionLines(pr *Projection) string {
	if pr == nil {
		return ""
	}
	var b strings.Builder
	tag := "agrees with the knee"
	if !pr.Agrees {
		tag = "**disagrees with the knee**"
	}
	fmt.Fprintf(&b, "\n**Projection** (%s): %s\n\n", tag, pr.Text)
	for _, p := range pr.Resources {
		fmt.Fprintf(&b, "- %s\n", p)
	}
	return b.String()
}

// kneeText is the measured knee: "2,250–2,531", "≥ 3,000".
func kneeText(res *Result) string {
	switch {
	case res.Capacity == 0:
		return "not found"
	case res.FirstFailure == 0:
		return "≥ " + format.Level(res.Capacity)
	}
	return format.Level(res.Capacity) + "–" + format.Level(res.FirstFailure)
}

// reachedAt reports whether the resource was at 95% of its limit or more
// in a step at level (its most memory, its mean cores).
func (p ResourceProjection) reachedAt(res *Result, level float64) bool {
	for _, s := range res.Steps {
		if s.Step.Level != level {
			continue
		}
		if r := s.Resource(p.Component, p.Metric); r != nil && r.Limit > 0 {
			v := r.Max
			if p.Metric == "cpu" {
				v = r.Mean
			}
			if v >= 0.95*r.Limit {
				return true
			}
		}
	}
	return false
}
