package loadtest

import (
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// A step is judged on the load its level stands for (principle 9). A hold
// whose offered load drifts — modeled users that began in phase and are
// still settling, a burst the ramp set off — measures something else, so
// each hold tests its load for a trend: the requests begun in its first
// third against those begun in its last, for all requests together and
// for each request kind (the mix).
//
// Two things make the test honest:
//
//   - Requests come in clusters (a user's burst of calls), so counts vary
//     far more than a Poisson law says. Modeled users are independent of
//     one another, though: each user's own difference between the thirds
//     is one independent term, and the variance of their sum is estimated
//     from the terms themselves, whatever the clustering inside a user.
//     Requests of no user (the open model's arrivals, independent by
//     construction) are each a term of their own.
//   - In a closed model a target that slows down slows its users: they
//     wait longer for answers and begin fewer requests. That is the
//     target's doing, and its checks judge it. So a user's requests are
//     counted per second it was not waiting for an answer (its exposure),
//     and a fall of the load while the users' waiting grew by a tenth of
//     their time or more is left to the checks. (Per second of exposure
//     is only a first correction: a user waits during its bursts, so a
//     slowing target takes exposure mostly from its busiest users.)
//   - A failing target changes what its users do without making them
//     wait: they retry, reconnect, give up a burst. While the share of
//     failed requests grew by a tenth or more, or was most of the last
//     third's, no drift voids the step: the target's checks judge it (the
//     knee's 3,375-user probe of make load, the relay at 100% of its CPU
//     and memory and 0.6 of 11.9 requests/s answered, was voided as a
//     drift before).

// minDriftZ is how many standard errors a drift must be to void a step:
// with every kind tested besides the whole, a stationary load's chance
// drift should void about one step in several hundred, not more.
const minDriftZ = 3.5

// waitingGrew is how much of the modeled users' time (as a fraction of
// their exposure in the first third) their waiting for answers must have
// grown by for a falling load to be taken as the target's doing.
const waitingGrew = 0.1

// failuresGrew is how much the share of failed requests must have grown
// by, from the first third to the last, for a drift to be taken as the
// users' reaction to a failing target.
const failuresGrew = 0.1

// targetFailing reports, of the trend of all requests, whether the target
// failed enough more in the last third than in the first — or failed most
// of the last third's requests — for any drift to be its users' reaction.
func targetFailing(t result.Trend) bool {
	if t.Last == 0 {
		return false
	}
	last := float64(t.FailedLast) / float64(t.Last)
	first := 0.0
	if t.First > 0 {
		first = float64(t.FailedFirst) / float64(t.First)
	}
	return last >= 0.5 || last-first >= failuresGrew
}

// minDriftCount is the fewest requests of a kind in the two thirds for its
// own trend to be tested: below it the kind's mix share is noise.
const minDriftCount = 40

// drifted returns why the trend voids its step: its change is beyond
// maxChange (a fraction) and beyond chance; "" when it does not. failing
// is whether the target failed its users more as the hold went on (the
// trend of all requests tells, targetFailing).
func drifted(t result.Trend, maxChange float64, failing bool) string {
	c, z := t.Change(), t.Z()
	if t.First+t.Last < minDriftCount || math.IsNaN(c) || math.Abs(c) <= maxChange || math.Abs(z) < minDriftZ {
		return ""
	}
	if c < 0 && t.ExposureLast < (1-waitingGrew)*t.ExposureFirst {
		return "" // the users were waiting on the target: its checks judge it
	}
	if failing {
		return "" // the users were reacting to its failures: its checks judge it
	}
	verb := "fell"
	if c > 0 {
		verb = "rose"
	}
	what := "offered load"
	if t.Kind != AllRequests {
		what = t.Kind + " requests (the kind mix)"
	}
	pace := ""
	if e1, e3 := t.Exposures(); math.Abs(e3-e1) > 0.01*e1 {
		pace = " per second the users were not waiting for an answer"
	}
	return fmt.Sprintf("the workload was not in steady state: %s %s %.3g → %.3g/s from the first third of the hold to the last (%+.0f%%%s, z %.1f; bound ±%.0f%%) — start modeled users at random points of their cycle (User.Think, dist.Residual) or lengthen the ramp or HOLD past the users' cycle",
		what, verb, t.FirstRate(), t.LastRate(), c*100, pace, z, maxChange*100)
}

// thirds tells which third of a hold an instant is in, and keeps the
// per-user counts of the hold's window.
type thirds struct {
	start, end time.Time
	third      time.Duration
	// users is the number of modeled users the hold runs (0 for another
	// workload): those that never asked anything were never waiting.
	users int
}

// of returns 0 for the first third, 1 for the last, -1 for the middle or
// outside the hold.
func (h *thirds) of(t time.Time) int {
	switch {
	case h == nil || h.third <= 0 || t.Before(h.start) || !t.Before(h.end):
		return -1
	case t.Before(h.start.Add(h.third)):
		return 0
	case !t.Before(h.end.Add(-h.third)):
		return 1
	}
	return -1
}

// unitCounts is one modeled user's requests and waiting in a window's
// first and last thirds.
type unitCounts struct {
	n    [][2]atomic.Int32 // by kind
	wait [2]atomic.Int64   // nanoseconds spent waiting for answers
}

// overlap returns how much of [from, to) lies in third i.
func (h *thirds) overlap(i int, from, to time.Time) time.Duration {
	lo, hi := h.start, h.start.Add(h.third)
	if i == 1 {
		lo, hi = h.end.Add(-h.third), h.end
	}
	if from.After(lo) {
		lo = from
	}
	if to.Before(hi) {
		hi = to
	}
	return max(0, hi.Sub(lo))
}

// trends computes the window's trends: all request kinds together first,
// then each request kind with enough requests (observed kinds are no
// load).
func (w *window) trends(names []string, request func(k int) bool) []result.Trend {
	h := w.span
	if h == nil || h.third <= 0 {
		return nil
	}
	all := result.Trend{Kind: AllRequests, Third: h.third}
	per := make([]result.Trend, len(names))
	for k := range per {
		per[k] = result.Trend{Kind: names[k], Third: h.third}
	}
	// Requests of no user: each its own unit.
	for k, ks := range *w.kinds.Load() {
		if k >= len(per) || !request(k) {
			continue
		}
		f, l := ks.alone[0].Load(), ks.alone[1].Load()
		for _, t := range []*result.Trend{&per[k], &all} {
			t.First += f
			t.Last += l
			t.SumFirst2 += float64(f)
			t.SumLast2 += float64(l)
		}
	}
	// Modeled users: each user one unit, with its exposure.
	units := *w.units.Load()
	seen := 0
	third := h.third.Seconds()
	var e1, e3 float64
	for _, u := range units {
		if u == nil {
			continue
		}
		seen++
		e1 += math.Max(0, third-time.Duration(u.wait[0].Load()).Seconds())
		e3 += math.Max(0, third-time.Duration(u.wait[1].Load()).Seconds())
		var f, l int64
		for k := range u.n {
			if k >= len(per) || !request(k) {
				continue
			}
			a, b := int64(u.n[k][0].Load()), int64(u.n[k][1].Load())
			f, l = f+a, l+b
			addUnit(&per[k], a, b)
		}
		addUnit(&all, f, l)
	}
	all.FailedFirst, all.FailedLast = w.failed[0].Load(), w.failed[1].Load()
	if seen > 0 {
		// Users that asked nothing in the hold were never waiting.
		idle := float64(max(0, h.users-seen)) * third
		e1, e3 = e1+idle, e3+idle
		for _, t := range append([]*result.Trend{&all}, ptrs(per)...) {
			t.ExposureFirst, t.ExposureLast = e1, e3
		}
	}
	out := []result.Trend{all}
	for k, t := range per {
		if request(k) && t.First+t.Last > 0 {
			out = append(out, t)
		}
	}
	return out
}

func addUnit(t *result.Trend, first, last int64) {
	t.First += first
	t.Last += last
	t.SumFirst2 += float64(first * first)
	t.SumLast2 += float64(last * last)
	t.SumCross += float64(first * last)
}

func ptrs(ts []result.Trend) []*result.Trend {
	out := make([]*result.Trend, len(ts))
	for i := range ts {
		out[i] = &ts[i]
	}
	return out
}

// unit returns user id's counts in the window, made on first use.
func (w *window) unit(id, kinds int) *unitCounts {
	if us := *w.units.Load(); id < len(us) && us[id] != nil {
		return us[id]
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	us := *w.units.Load()
	if id < len(us) && us[id] != nil {
		return us[id]
	}
	grown := us
	if id >= len(us) {
		grown = make([]*unitCounts, max(id+1, 2*len(us)))
		copy(grown, us)
	} else {
		grown = append([]*unitCounts(nil), us...)
	}
	u := &unitCounts{n: make([][2]atomic.Int32, kinds)}
	grown[id] = u
	w.units.Store(&grown)
	return u
}

// offerUnit counts request s of modeled user id in its third.
func (w *window) offerUnit(s span, id int) {
	i := w.span.of(s.intended)
	if i < 0 || id < 0 {
		return
	}
	u := w.unit(id, w.kindCount)
	if s.kind < len(u.n) {
		u.n[s.kind][i].Add(1)
	}
}

// waited adds the time user id waited for an answer, from to to, to the
// thirds it overlaps.
func (w *window) waited(id int, from, to time.Time) {
	h := w.span
	if h == nil || h.third <= 0 || id < 0 || !to.After(h.start) || !from.Before(h.end) {
		return
	}
	u := w.unit(id, w.kindCount)
	for i := range 2 {
		if d := h.overlap(i, from, to); d > 0 {
			u.wait[i].Add(int64(d))
		}
	}
}

// offerAlone counts request s of no user in its third.
func (w *window) offerAlone(s span) {
	if i := w.span.of(s.intended); i >= 0 {
		w.stats(s.kind).alone[i].Add(1)
	}
}
