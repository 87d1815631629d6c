package seed

import "time"

// Option configures [Copy] and [Tx.Copy].
type Option func(*config)

type config struct {
	logf          func(format string, args ...any)
	progressEvery time.Duration
	batchRows     int
	expectedRows  int64
}

// Defaults of the options.
const (
	// DefaultProgressEvery is the interval between progress lines of a
	// long load.
	DefaultProgressEvery = 5 * time.Second
	// DefaultBatchRows is the number of rows per INSERT statement on
	// SQLite.
	DefaultBatchRows = 256
	// sqliteMaxVariables is SQLite's default SQLITE_MAX_VARIABLE_NUMBER
	// (since 3.32): the most bound values one statement may carry.
	sqliteMaxVariables = 32766
)

// WithLogf reports progress and a summary through logf, for example
// t.Logf or log.Printf. The default reports nothing. Lines never contain
// a row's values or a database password.
func WithLogf(logf func(format string, args ...any)) Option {
	return func(c *config) { c.logf = logf }
}

// WithProgressEvery sets the interval between progress lines of a long load
// (default [DefaultProgressEvery]); loads shorter than it log only their
// summary.
func WithProgressEvery(d time.Duration) Option {
	return func(c *config) { c.progressEvery = d }
}

// WithBatchRows sets the number of rows per INSERT statement on SQLite
// (default [DefaultBatchRows]; capped so one statement binds at most 32,766
// values). It has no effect on PostgreSQL, where COPY streams every row.
func WithBatchRows(n int) Option {
	return func(c *config) { c.batchRows = n }
}

// WithExpectedRows tells [Copy] how many rows the generator will yield, so
// progress lines show a percentage. It changes nothing else.
func WithExpectedRows(n int64) Option {
	return func(c *config) { c.expectedRows = n }
}

func newConfig(opts []Option) config {
	c := config{progressEvery: DefaultProgressEvery, batchRows: DefaultBatchRows}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	if c.progressEvery <= 0 {
		c.progressEvery = DefaultProgressEvery
	}
	if c.batchRows <= 0 {
		c.batchRows = DefaultBatchRows
	}
	return c
}

func (c *config) log(format string, args ...any) {
	if c.logf != nil {
		c.logf(format, args...)
	}
}
