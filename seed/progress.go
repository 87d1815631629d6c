package seed

import (
	"fmt"
	"time"
)

// progressCheckRows is how many rows pass between two looks at the clock.
const progressCheckRows = 4096

// progress counts the rows of one load and logs a line every interval.
type progress struct {
	c        *config
	label    string
	expected int64
	start    time.Time
	next     time.Time
	n        int64
	pending  int64 // rows since the last look at the clock
}

func newProgress(c *config, label string, expected int64) *progress {
	now := time.Now()
	return &progress{c: c, label: label, expected: expected, start: now, next: now.Add(c.progressEvery)}
}

// add counts n more rows and logs when an interval has passed.
func (p *progress) add(n int64) {
	p.n += n
	p.pending += n
	if p.pending < progressCheckRows || p.c.logf == nil {
		return
	}
	p.pending = 0
	now := time.Now()
	if now.Before(p.next) {
		return
	}
	p.next = now.Add(p.c.progressEvery)
	el := now.Sub(p.start)
	if p.expected > 0 {
		p.c.log("seed: %s: %s of %s rows (%d%%), %s rows/s", p.label, count(p.n), count(p.expected),
			p.n*100/p.expected, count(rate(p.n, el)))
		return
	}
	p.c.log("seed: %s: %s rows, %s rows/s", p.label, count(p.n), count(rate(p.n, el)))
}

// done logs the summary of a load that took longer than one interval.
func (p *progress) done() {
	el := time.Since(p.start)
	if el >= p.c.progressEvery {
		p.c.log("seed: %s: %s rows in %v (%s rows/s)", p.label, count(p.n), el.Round(time.Millisecond), count(rate(p.n, el)))
	}
}

func rate(n int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}

// count formats n with thousands separators: 1234567 → "1,234,567".
func count(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	if neg {
		return "-" + string(b)
	}
	return string(b)
}
