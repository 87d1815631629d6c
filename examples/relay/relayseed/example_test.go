package relayseed_test

import (
	"fmt"

	"github.com/headroom-dev/headroom/examples/relay/relayseed"
	"github.com/headroom-dev/headroom/examples/relay/schema"
)

// A load generator learns the seeded users and derives their tokens from the
// spec and secret the database was seeded with, without the database.
func ExampleSpec_Population() {
	spec := relayseed.Smoke
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
	// relayseed.Spec{Name:"" Workspaces:1 UsersPerWorkspace:10 ConnectorsPerUser:5 Tools:default UpstreamURL:"" UsageRows:2000 EventsRows:200 Days:7 End:default Seed:0 Secret:[redacted]}
}
