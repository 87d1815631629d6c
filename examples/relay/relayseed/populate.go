package relayseed

import (
	"testing"

	"github.com/headroom-dev/headroom/seed"
)

// Populate opens the database at url (see [seed.Open]), applies spec to it and
// returns the population, for a test: it logs to t, closes the database
// when done and fails the test at once when the database cannot be reached
// or the spec cannot be applied.
//
//	pop := relayseed.Populate(t, stack.SeedURL(), seed.Smoke.ForUsers(800))
func Populate(t testing.TB, url string, spec Spec, opts ...Option) *Population {
	t.Helper()
	db, err := seed.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pop, err := Apply(t.Context(), db, spec, append([]Option{WithLogf(t.Logf)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return pop
}
