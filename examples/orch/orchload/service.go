// Package orchload is what a load test of the orchestrator (examples/orch)
// needs besides the framework: its processes as fixtures.Services, with
// their contract.
package orchload

import (
	"strconv"

	"github.com/headroom-dev/headroom/examples/internal/loadkit"
	"github.com/headroom-dev/headroom/fixtures"
)

// Package is the orchestrator's main package, built by import path so that
// it resolves wherever Headroom sits.
const Package = "github.com/headroom-dev/headroom/examples/orch"

// Service returns the orchestrator (an agent orchestrator on PostgreSQL)
// in its all role — the API, the live mission streams and the
// orchestrator in one process — for fixtures.WithTarget, with its
// contract: ORCH_ADDR, DATABASE_URL (through PgBouncer with
// fixtures.WithPooler, then with ORCH_POOLER=1), ORCH_LISTEN_URL
// (PostgreSQL itself), GOMAXPROCS and GOMEMLIMIT, metrics and profiles on,
// ready when GET /readyz answers 200. Set ORCH_ROLE to "web" on the
// target's replicas and add a [Worker] for the scaled-out setup; runners
// ([Runner]) run the attempts.
func Service() fixtures.Service { return loadkit.PostgresService("orch", Package, "ORCH") }

// Worker returns the orchestrator in its worker role, named orch-worker:
// the one process that queues every mission's tasks, for
// fixtures.WithService beside web replicas of [Service].
func Worker() fixtures.Service { return loadkit.Role(Service(), "orch-worker", "ORCH", "worker") }

// Runner returns replicas runners of the orchestrator (orch-runner-1, …),
// each running up to slots attempts at once against vendorURL (a
// template, such as "{{.UpstreamURL}}/echo?delay=12s"), for
// fixtures.WithService. Each names itself after its component and holds 14
// database connections.
func Runner(replicas, slots int, vendorURL string) fixtures.Service {
	s := loadkit.Role(Service(), "orch-runner", "ORCH", "runner")
	s.Replicas = replicas
	s.Env["ORCH_RUNNER_NAME"] = "{{.Name}}"
	s.Env["ORCH_RUNNER_SLOTS"] = strconv.Itoa(slots)
	s.Env["ORCH_DB_MAX_CONNS"] = "14"
	s.Env["ORCH_VENDOR_URL"] = vendorURL
	s.Env["ORCH_VENDOR_ALLOW_PRIVATE"] = "1" // a container network's mock
	return s
}
