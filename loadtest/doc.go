// Package loadtest is the core of Headroom: workloads (open arrivals,
// modeled users, or a Workload of your own), the recorder, plans (step
// ladders and knee searches), checks and the generator's self-checks,
// knobs, results and baselines. It has no Docker dependency; scenarios wire
// it to fixtures.
//
// A scenario is a TestLoad_* function that runs a [Scenario] with [Test]
// and acts on the one verdict, [Result.Err]: every check a step broke,
// every step that says nothing about the target (invalid), an incomplete
// run, and every regression against the committed baseline, told apart
// with errors.Is ([ErrBreach], [ErrInvalid], [ErrIncomplete],
// [ErrRegression]).
package loadtest
