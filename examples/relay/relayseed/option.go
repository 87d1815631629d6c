package relayseed

import (
	"time"

	"github.com/headroom-dev/headroom/seed"
)

// Option configures [Apply], [Remove] and [Populate].
type Option func(*config)

type config struct {
	logf func(format string, args ...any)
	copy []seed.Option // passed on to each table's load
}

// WithLogf reports progress and a summary through logf, for example
// t.Logf or log.Printf. The default reports nothing. Lines never contain
// the spec's secret or a database password.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(c *config) {
		c.logf = logf
		c.copy = append(c.copy, seed.WithLogf(logf))
	}
}

// WithProgressEvery sets the interval between progress lines of a long
// table load (see [seed.WithProgressEvery]).
func WithProgressEvery(d time.Duration) Option {
	return func(c *config) { c.copy = append(c.copy, seed.WithProgressEvery(d)) }
}

// WithBatchRows sets the rows per INSERT statement on SQLite (see
// [seed.WithBatchRows]).
func WithBatchRows(n int) Option {
	return func(c *config) { c.copy = append(c.copy, seed.WithBatchRows(n)) }
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

func (c *config) log(format string, args ...any) {
	if c.logf != nil {
		c.logf(format, args...)
	}
}
