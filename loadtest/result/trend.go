package result

import (
	"math"
	"time"
)

// Trend is one hold's test of the load offered for a trend: requests begun
// in the first third of the hold against those begun in the last, for all
// request kinds together or for one. Its sums add over the generators of a
// sharded run (their users are disjoint).
type Trend struct {
	// Kind is a request kind, or AllRequests.
	Kind string `json:"kind"`
	// Third is the length of a third of the hold.
	Third time.Duration `json:"third"`
	// First and Last count the requests begun in the first and the last
	// third.
	First int64 `json:"first"`
	Last  int64 `json:"last"`
	// ExposureFirst and ExposureLast are the modeled users' time not spent
	// waiting for an answer in each third, in user-seconds; zero for
	// requests of no user, whose exposure is the third itself.
	ExposureFirst float64 `json:"exposure_first,omitempty"`
	ExposureLast  float64 `json:"exposure_last,omitempty"`
	// FailedFirst and FailedLast count, on the trend of all requests
	// only, the requests begun in the first and the last third that ended
	// in any outcome but OK: they tell a target that failed more as the
	// hold went on.
	FailedFirst int64 `json:"failed_first,omitempty"`
	FailedLast  int64 `json:"failed_last,omitempty"`
	// SumFirst2, SumLast2 and SumCross sum, over the independent units
	// (users, or requests of no user), the squares of each unit's count in
	// the first and in the last third and their product: the variance of
	// the change.
	SumFirst2 float64 `json:"sum_first2"`
	SumLast2  float64 `json:"sum_last2"`
	SumCross  float64 `json:"sum_cross,omitempty"`
}

// FirstRate and LastRate are the requests begun per second in the first
// and the last third of the hold.
func (t Trend) FirstRate() float64 { return float64(t.First) / t.Third.Seconds() }

// LastRate is the requests begun per second in the last third.
func (t Trend) LastRate() float64 { return float64(t.Last) / t.Third.Seconds() }

// Exposures returns the exposure of each third: the users' time not spent
// waiting, or the third itself for requests of no user.
func (t Trend) Exposures() (first, last float64) {
	if t.ExposureFirst > 0 && t.ExposureLast > 0 {
		return t.ExposureFirst, t.ExposureLast
	}
	return t.Third.Seconds(), t.Third.Seconds()
}

// Change returns the relative change of the rate of requests per second of
// exposure from the first third to the last: −0.5 when it halved; NaN
// without a request in the first third.
func (t Trend) Change() float64 {
	e1, e3 := t.Exposures()
	if t.First == 0 {
		return math.NaN()
	}
	return (float64(t.Last)/e3)/(float64(t.First)/e1) - 1
}

// Z returns the change in standard errors: the difference of the two
// thirds' rates over its standard error, estimated from the independent
// units' own differences; 0 when there is nothing to compare.
func (t Trend) Z() float64 {
	e1, e3 := t.Exposures()
	v := t.SumLast2/(e3*e3) + t.SumFirst2/(e1*e1) - 2*t.SumCross/(e1*e3)
	if v <= 0 {
		return 0
	}
	return (float64(t.Last)/e3 - float64(t.First)/e1) / math.Sqrt(v)
}

// Add returns the trend of t's requests and o's together: the same kind
// and hold measured by two generators with disjoint users.
func (t Trend) Add(o Trend) Trend {
	t.First += o.First
	t.Last += o.Last
	t.ExposureFirst += o.ExposureFirst
	t.ExposureLast += o.ExposureLast
	t.FailedFirst += o.FailedFirst
	t.FailedLast += o.FailedLast
	t.SumFirst2 += o.SumFirst2
	t.SumLast2 += o.SumLast2
	t.SumCross += o.SumCross
	return t
}
