package result

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/headroom-dev/headroom/internal/format"
)

// Scaling is how a service's capacity grows with its replicas: seed 000's
// "capacity is expected to scale roughly linearly with replicas (checked
// periodically)", checked. Each replica count's knee search brackets its
// knee between the highest level that held and the lowest that failed;
// the factor over one replica is bracketed by the two brackets' far ends
// (the fewest n replicas may hold over the most one may), so its interval
// is as wide as the searches were precise, and no wider.
type Scaling struct {
	// Points are the replica counts measured, from the fewest.
	Points []ScalingPoint `json:"points"`
	// MinEfficiency is the share of linear scaling below which n replicas
	// are sublinear: n replicas hold less than MinEfficiency·n times one.
	MinEfficiency float64 `json:"min_efficiency"`
	// Unit is the level's unit, "users" or "arrivals/s".
	Unit string `json:"unit"`
}

// ScalingPoint is one replica count's capacity and its factor over the
// fewest replicas measured.
type ScalingPoint struct {
	Replicas int `json:"replicas"`
	// Capacity is the highest level that held; FirstFailure the lowest
	// that failed (0: none did, and Capacity is a lower bound).
	Capacity     float64 `json:"capacity"`
	FirstFailure float64 `json:"first_failure,omitempty"`
	// Factor is the capacity against the base point's, each taken at the
	// middle of its bracket (geometric; 0 where either is a lower bound);
	// Low and High bound it (High 0: unbounded, where this count's
	// capacity is a lower bound; Low 0 where the base's is). The base
	// point's are 1.
	Factor float64 `json:"factor"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	// Verdict is base, linear, sublinear, superlinear or unknown
	// (ScalingBase…);
	// Text says why.
	Verdict string `json:"verdict"`
	Text    string `json:"text"`
}

// A scaling point's verdicts.
const (
	// ScalingBase: the fewest replicas, the others' base.
	ScalingBase = "base"
	// ScalingLinear: the factor's whole interval is at MinEfficiency·n or
	// over, and not wholly over n/MinEfficiency: roughly linear, surely.
	ScalingLinear = "linear"
	// ScalingSublinear: the whole interval is under MinEfficiency·n — the
	// replicas surely share something that runs out (the database, a lock,
	// a fan-out every replica pays).
	ScalingSublinear = "sublinear"
	// ScalingSuperlinear: the whole interval is over n/MinEfficiency — one
	// replica ran out of something n replicas have n of that is not the
	// pod's (a per-process cache, a connection pool).
	ScalingSuperlinear = "superlinear"
	// ScalingUnknown: no factor, or an interval too wide to say (a lower
	// bound, a search too coarse, a run the generator limited).
	ScalingUnknown = "unknown"
)

// DefaultMinEfficiency is "roughly linear": n replicas hold at least 80%
// of n times one.
const DefaultMinEfficiency = 0.8

// NewScaling sets knee searches of the same scenario at different replica
// counts side by side (runs[i] measured with replicas[i]); the fewest
// replicas are the base the factors are taken over. minEff is
// MinEfficiency (0: DefaultMinEfficiency). A run whose generator gave out
// first, or that no level passed, has no factor.
func NewScaling(replicas []int, runs []*Result, minEff float64) (*Scaling, error) {
	if len(replicas) != len(runs) || len(runs) < 2 {
		return nil, fmt.Errorf("result: scaling needs two replica counts or more, each with its run (%d counts, %d runs)", len(replicas), len(runs))
	}
	if minEff == 0 {
		minEff = DefaultMinEfficiency
	}
	if !(minEff > 0 && minEff <= 1) {
		return nil, fmt.Errorf("result: scaling's minimum efficiency %g: give a share of linear in (0, 1], such as 0.8", minEff)
	}
	s := &Scaling{MinEfficiency: minEff}
	for i, n := range replicas {
		if n < 1 || runs[i] == nil {
			return nil, fmt.Errorf("result: scaling: replica count %d (run %d): give counts of 1 or more, each with a run", n, i+1)
		}
		if i > 0 && n <= replicas[i-1] {
			return nil, fmt.Errorf("result: scaling: replica counts %v: give them in increasing order, each once", replicas)
		}
		s.Unit = runs[i].LevelUnit()
		p := ScalingPoint{Replicas: n, Capacity: runs[i].Capacity}
		if !runs[i].CapacityLowerBound {
			p.FirstFailure = runs[i].FirstFailure
		}
		s.Points = append(s.Points, p)
	}
	base := s.Points[0]
	why := func(r *Result) string {
		switch {
		case r.Verdict == Invalid || slices.ContainsFunc(r.Steps, func(st *StepResult) bool { return st.Verdict == Invalid }):
			return "the generator or the harness gave out during its search"
		case r.Partial:
			return "its search was interrupted"
		case r.Capacity <= 0:
			return "no level held"
		}
		return ""
	}
	baseWhy := why(runs[0])
	for i := range s.Points {
		p := &s.Points[i]
		if i == 0 {
			p.Factor, p.Low, p.High, p.Verdict = 1, 1, 1, ScalingBase
			p.Text = "the base the others are taken over"
			if baseWhy != "" {
				p.Verdict, p.Text = ScalingUnknown, "the base: "+baseWhy
			}
			continue
		}
		if w := why(runs[i]); w != "" || baseWhy != "" {
			if w == "" {
				w = fmt.Sprintf("%d replica(s), the base: %s", base.Replicas, baseWhy)
			}
			p.Verdict, p.Text = ScalingUnknown, "no factor: "+w
			continue
		}
		s.judge(p, base)
	}
	return s, nil
}

// judge sets p's factor, interval and verdict against base.
func (s *Scaling) judge(p *ScalingPoint, base ScalingPoint) {
	mid := func(q ScalingPoint) float64 {
		if q.FirstFailure > 0 {
			return math.Sqrt(q.Capacity * q.FirstFailure)
		}
		return q.Capacity
	}
	// A lower bound's middle is no middle: a factor needs both knees.
	if p.FirstFailure > 0 && base.FirstFailure > 0 {
		p.Factor = mid(*p) / mid(base)
	}
	// The most base may hold is its first failure; with none it is
	// unbounded, and the factor has no low end over zero.
	if base.FirstFailure > 0 {
		p.Low = p.Capacity / base.FirstFailure
	}
	if p.FirstFailure > 0 {
		p.High = p.FirstFailure / base.Capacity
	}
	linear := float64(p.Replicas) / float64(base.Replicas)
	lo, hi := s.MinEfficiency*linear, linear/s.MinEfficiency
	interval := s.factorText(*p)
	switch {
	case p.High > 0 && p.High < lo:
		p.Verdict = ScalingSublinear
		p.Text = fmt.Sprintf("%s: surely under %.0f%% of linear (×%.2f); the replicas share what runs out", interval, 100*s.MinEfficiency, lo)
	case p.Low > hi:
		p.Verdict = ScalingSuperlinear
		p.Text = fmt.Sprintf("%s: surely over linear (×%.2f) by more than %.0f%%; %d replica(s) ran out of something more replicas have more of", interval, linear, 100*(1/s.MinEfficiency-1), base.Replicas)
	case p.Low >= lo:
		p.Verdict = ScalingLinear
		p.Text = fmt.Sprintf("%s: surely %.0f%% of linear (×%.2f) or more", interval, 100*s.MinEfficiency, linear)
	default:
		p.Verdict = ScalingUnknown
		what := "the searches' brackets are too wide to tell: a finer PRECISION narrows them"
		if p.Low == 0 {
			what = fmt.Sprintf("%d replica(s)' capacity is a lower bound", base.Replicas)
		}
		p.Text = fmt.Sprintf("%s: may be linear (×%.2f) or not; %s", interval, linear, what)
	}
}

// factorText renders a point's factor with its interval: "×2.00
// (×1.82–×2.20)", "≥ ×1.82" (a lower bound), "≤ ×2.20" (over a base that
// is one), "–".
func (s *Scaling) factorText(p ScalingPoint) string {
	switch {
	case p.Replicas == s.Points[0].Replicas:
		return "×1 (the base)"
	case p.Factor > 0:
		return fmt.Sprintf("×%.2f (×%.2f–×%.2f)", p.Factor, p.Low, p.High)
	case p.Low > 0:
		return fmt.Sprintf("≥ ×%.2f", p.Low)
	case p.High > 0:
		return fmt.Sprintf("≤ ×%.2f", p.High)
	}
	return "–"
}

// Err reports every replica count that surely scaled sublinearly; nil
// when none did (linear, superlinear or unknown).
func (s *Scaling) Err() error {
	var errs []error
	for _, p := range s.Points {
		if p.Verdict == ScalingSublinear {
			errs = append(errs, fmt.Errorf("%d replicas: %s", p.Replicas, p.Text))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: capacity did not scale with replicas: %w", ErrBreach, errors.Join(errs...))
}

// Header and Rows are the scaling as a table: a row per replica count
// with its capacity, factor and verdict.
func (s *Scaling) Header() []string {
	return []string{"Replicas", "Capacity (" + s.Unit + ")", "Knee between", "Per replica", "Factor over " + format.Level(float64(s.Points[0].Replicas)), "Verdict"}
}

// Rows: see Header.
func (s *Scaling) Rows() [][]string {
	var rows [][]string
	for _, p := range s.Points {
		capacity, between, per := "none", "–", "–"
		if p.Capacity > 0 {
			capacity = format.Level(p.Capacity)
			per = format.Level(math.Round(p.Capacity / float64(p.Replicas)))
			between = "≥ " + capacity
			if p.FirstFailure > 0 {
				between = capacity + " – " + format.Level(p.FirstFailure)
			} else {
				capacity = "≥ " + capacity
				per = "≥ " + per
			}
		}
		rows = append(rows, []string{format.Level(float64(p.Replicas)), capacity, between, per, s.factorText(p), p.Verdict})
	}
	return rows
}
