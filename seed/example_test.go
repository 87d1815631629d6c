package seed_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/headroom-dev/headroom/examples/relay/schema"
	"github.com/headroom-dev/headroom/seed"
)

// A load generator learns the seeded users and derives their tokens from the
// spec and secret the database was seeded with, without the database.
func ExampleSpec_Population() {
	spec := seed.Smoke
	spec.Secret = []byte("0123456789abcdef0123456789abcdef")
	pop, err := spec.Population()
	if err != nil {
		panic(err)
	}
	u := pop.Users[0]
	fmt.Println(len(pop.Users), "users; first:", u.ID, u.Name, "in workspace", u.WorkspaceID)
	fmt.Println("its first connector's tools:", u.Connectors[0].QualifiedTools())
	fmt.Println("token hash:", schema.TokenHash(pop.Token(u.ID))[:16]+"…")
	fmt.Println(spec) // never shows the secret
	// Output:
	// 10 users; first: 1 user-1 in workspace 1
	// its first connector's tools: [github__tool_01 github__tool_06 github__tool_11 github__tool_16]
	// token hash: 8cff47b63afb96f9…
	// seed.Spec{Name:"" Workspaces:1 UsersPerWorkspace:10 ConnectorsPerUser:5 Tools:default UpstreamURL:"" UsageRows:2000 EventsRows:200 Days:7 End:default Seed:0 Secret:[redacted]}
}

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
