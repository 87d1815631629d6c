// Package scenarios holds Headroom's load scenarios: TestLoad_* functions,
// built only with the load tag so that `go test ./...` stays fast:
//
//	go test -tags load -v ./loadtest/scenarios/                       # every scenario
//	go test -tags load -v -run TestLoad_Smoke ./loadtest/scenarios/   # one
//	go test -tags load -short ./loadtest/scenarios/                   # under a minute of load each
//
// The scenarios:
//
//   - TestLoad_Smoke: a ladder of modeled gateway users on the relay, the
//     README's complete example;
//   - TestLoad_PlainHTTP: the README's plain-HTTP example;
//   - TestLoad_GatewayKnee, TestLoad_RateCeiling, TestLoad_IdleStreams: the
//     three tables of the published gateway report (seed 000) — users per
//     pod by knee search, request-rate ceilings per request type and
//     database, and the cost of an idle held stream;
//   - TestLoad_Forward, TestLoad_FeatureTax, TestLoad_Drain: the runtime
//     studies of seed 003 — the forward path under a blocking vs a
//     multiplexing upstream runtime, the tax of metrics and trace
//     postures (interleaved A/B), and the drain policies at SIGTERM —
//     each written as a study page (`headroom render -studies`);
//   - TestLoad_Orchestrator: an agent orchestrator's acceptance run (seed
//     002) on examples/orch — 125 missions × 4 tasks approved at once, 500
//     attempts on 8 runners against a 12 s vendor, 20 readers, a live
//     stream per mission board — in one process and with two web processes
//     and a worker;
//   - TestLoad_Helpdesk: the helpdesk's agent ladder (seed 004) on
//     examples/desk — 250 to 3,000 agents on one desk (Standard) or two
//     web servers, a worker and PgBouncer (Scale), live client and poll;
//   - TestLoad_QueryCount: counting queries per request (seed 002's
//     method) — the relay's dashboard with and without its N+1 fault,
//     side by side in interleaved A/B trials;
//   - TestLoad_Soak: memory over a working day (seed 004's open
//     question) — the relay held at one level for hours, its memory and
//     goroutines fitted over the hold, as built (no leak) and with a
//     planted leak (caught);
//   - TestLoad_Replicas: capacity against replicas (seed 000's "roughly
//     linear") — the gateway knee on 1, 2 and 3 small relay pods behind
//     Caddy, each count's factor over one pod with its interval.
//
// Each scenario starts the stack with package fixtures, seeds it with its
// product's seeder (examples/relay/relayseed, examples/desk/deskseed, built
// on package seed), drives a plan with package loadtest, fails on an SLO
// breach, and writes its result to testdata/results/ and compares it with
// testdata/baselines/. Knobs come from the environment (USERS, RAMP, HOLD, GAP,
// SEED, a knee's START, FACTOR, MAX…, LOADTEST_BACKEND, LOADTEST_DB,
// LOADTEST_TARGET_CPUS, LOADTEST_TARGET_MEMORY); every knob a run used is
// recorded in its result.
package scenarios
