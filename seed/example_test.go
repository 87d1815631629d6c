package seed_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/headroom-dev/headroom/seed"
)

// Copy streams rows from a generator into any table.
func ExampleCopy() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		panic(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one in-memory database
	if _, err := db.Exec(`CREATE TABLE orders (id INTEGER PRIMARY KEY, sku TEXT, qty INTEGER)`); err != nil {
		panic(err)
	}
	rows := func(yield func([]any) bool) error {
		for i := range 1000 {
			if !yield([]any{i + 1, fmt.Sprintf("SKU-%03d", i%7), i%5 + 1}) {
				return nil
			}
		}
		return nil
	}
	n, err := seed.Copy(context.Background(), seed.SQLite(db), "orders", []string{"id", "sku", "qty"}, rows)
	fmt.Println(n, err)

	// Or from an iterator.
	n, err = seed.Copy(context.Background(), seed.SQLite(db), "orders", []string{"id", "sku", "qty"},
		seed.FromSeq(slices.Values([][]any{{1001, "SKU-X", 1}})))
	fmt.Println(n, err)
	// Output:
	// 1000 <nil>
	// 1 <nil>
}
