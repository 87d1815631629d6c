// Package loadtest is the core of Headroom: workloads (open arrivals and
// modeled users), the recorder, plans (step ladders), SLO checks and the
// generator's self-checks. It has no Docker dependency; scenarios wire it to
// fixtures.
package loadtest
