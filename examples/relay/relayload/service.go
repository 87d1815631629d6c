// Package relayload is what a load test of the relay (examples/relay)
// needs besides the framework: the relay as a fixtures.Service, with its
// contract. Its population is examples/relay/relayseed.
package relayload

import "github.com/headroom-dev/headroom/fixtures"

// Package is the relay's main package, built by import path so that it
// resolves wherever Headroom sits (this repository, a replace, the module
// cache).
const Package = "github.com/headroom-dev/headroom/examples/relay"

// Service returns the relay as the service under test, for
// fixtures.WithTarget, with its contract: RELAY_ADDR, DATABASE_URL with
// PostgreSQL or RELAY_SQLITE_PATH with SQLite, GOMAXPROCS and GOMEMLIMIT,
// ready when GET /readyz answers 200, profiles served at /debug/pprof
// (RELAY_PPROF).
func Service() fixtures.Service {
	return fixtures.Service{
		Name:      "relay",
		Package:   Package,
		Port:      8080,
		Ready:     fixtures.HTTPReady("/readyz", 200),
		GoRuntime: true,
		Pprof:     "/debug/pprof",
		Env: map[string]string{
			"RELAY_PPROF":       "1",
			"RELAY_ADDR":        "{{.Addr}}",
			"DATABASE_URL":      `{{if eq .Database "postgres"}}{{.DatabaseURL}}{{end}}`,
			"RELAY_SQLITE_PATH": `{{if eq .Database "sqlite"}}{{.SQLitePath}}{{end}}`,
		},
	}
}
