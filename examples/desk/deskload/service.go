package deskload

import (
	"github.com/headroom-dev/headroom/examples/internal/loadkit"
	"github.com/headroom-dev/headroom/fixtures"
)

// Package is the desk's main package, built by import path so that it
// resolves wherever Headroom sits.
const Package = "github.com/headroom-dev/headroom/examples/desk"

// Service returns the desk (a helpdesk on PostgreSQL) as the service under
// test, for fixtures.WithTarget, with its contract: DESK_ADDR,
// DATABASE_URL (through PgBouncer with fixtures.WithPooler, then with
// DESK_POOLER=1: no prepared statements), DESK_LISTEN_URL (PostgreSQL
// itself: LISTEN needs a session of its own), GOMAXPROCS and GOMEMLIMIT,
// metrics and profiles on, ready when GET /readyz answers 200. Its role is
// DESK_ROLE, all by default: set "web" on the target's replicas and run
// one [Worker] beside them for the scaled-out setup.
func Service() fixtures.Service { return loadkit.PostgresService("desk", Package, "DESK") }

// Worker returns the desk in its worker role, named desk-worker: the
// outbox, presence expiry and the rest of the background work, for
// fixtures.WithService beside web replicas of [Service].
func Worker() fixtures.Service { return loadkit.Role(Service(), "desk-worker", "DESK", "worker") }
