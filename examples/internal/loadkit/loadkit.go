// Package loadkit holds what the example products' load-test packages
// (deskload, orchload) repeat: their processes as fixtures.Services. It
// is apart from package kit so that the services' binaries do not link
// the fixtures.
package loadkit

import (
	"maps"

	"github.com/headroom-dev/headroom/fixtures"
)

// PostgresService returns an example product on PostgreSQL as a
// fixtures.Service named name, built from the main package pkg, with the
// contract its variables (prefix "DESK" → DESK_ADDR …) share: <P>_ADDR,
// DATABASE_URL (through PgBouncer with fixtures.WithPooler, then with
// <P>_POOLER=1: no prepared statements), <P>_LISTEN_URL (PostgreSQL
// itself: LISTEN needs a session of its own), GOMAXPROCS and GOMEMLIMIT,
// metrics and profiles on, ready when GET /readyz answers 200.
func PostgresService(name, pkg, prefix string) fixtures.Service {
	return fixtures.Service{
		Name:      name,
		Package:   pkg,
		Port:      8080,
		Ready:     fixtures.HTTPReady("/readyz", 200),
		GoRuntime: true,
		Pprof:     "/debug/pprof",
		Env: map[string]string{
			prefix + "_ADDR":       "{{.Addr}}",
			"DATABASE_URL":         "{{.DatabaseURL}}",
			prefix + "_LISTEN_URL": "{{.DirectDatabaseURL}}",
			prefix + "_POOLER":     "{{if .Pooled}}1{{end}}",
			prefix + "_METRICS":    "1",
			prefix + "_PPROF":      "1",
		},
	}
}

// Role returns s in another role (<P>_ROLE=role), named name, serving no
// profiles to the run: a worker or runner beside the target.
func Role(s fixtures.Service, name, prefix, role string) fixtures.Service {
	s.Name, s.Pprof = name, ""
	s.Env = maps.Clone(s.Env)
	s.Env[prefix+"_ROLE"] = role
	return s
}
