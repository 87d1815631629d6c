package result

import (
	"fmt"
	"time"
)

// Shard makes a run one of Count generator processes (shards) that together
// generate the scenario's load, for a load larger than one machine can
// generate. Every shard runs the same scenario with the same seed and its
// own Index; package loadtest/shard merges their results exactly into the
// result one process would have written.
//
//   - Arrivals: every shard computes the whole schedule of the seed (times
//     and kinds) and sends arrival i when i mod Count = Index, so the
//     shards' arrivals together are the one-process schedule.
//   - Users: user u runs on shard u mod Count, with the random sequence it
//     has in one process (seed and u).
//   - Time: the shards begin at StartAt and place every ramp and hold on
//     wall-clock instants (StartAt plus the ladder's ramps, holds and Gaps),
//     so their step windows coincide.
//
// A sharded plan must be a loadtest.Ladder, and every shard runs all its steps
// (the merge stops the merged ladder where one process would have). A
// loadtest.Knee search decides each step from the step before, which would need a
// coordinator between steps: it is refused.
type Shard struct {
	// Index is this shard's number, from 0 to Count-1 (the completion
	// index of a Kubernetes Indexed Job).
	Index int `json:"index"`
	// Count is the number of shards; 0 means the run is not sharded.
	// Count 1 is a run with aligned steps, comparable with sharded ones.
	Count int `json:"count"`
	// StartAt is the instant every shard begins the plan; required.
	StartAt time.Time `json:"start_at"`
	// Gap is the pause between a step's hold and the next step's ramp,
	// during which the step's requests drain; default 2 s. The load stays
	// at the step's level during it.
	Gap time.Duration `json:"gap,omitempty"`
	// MaxSkew bounds how late a shard may begin a hold (and how far apart
	// the shards' holds may begin) before the step is invalid; default
	// 100 ms.
	MaxSkew time.Duration `json:"max_skew,omitempty"`
}

// ShardInfo records one shard of a sharded run in its result.
type ShardInfo struct {
	Shard
	// Host is the shard's machine fingerprint (Environment.Host) and Name
	// its host name (a pod's name on Kubernetes).
	Host string `json:"host,omitempty"`
	Name string `json:"name,omitempty"`
	// Steps is the number of steps the shard's result holds, Partial and
	// Verdict its result's; a merged result sets them.
	Steps   int     `json:"steps"`
	Partial bool    `json:"partial,omitempty"`
	Verdict Verdict `json:"verdict,omitempty"`
}

// WithDefaults returns s with its zero durations set to the defaults.
func (s Shard) WithDefaults() Shard {
	if s.Gap == 0 {
		s.Gap = 2 * time.Second
	}
	if s.MaxSkew == 0 {
		s.MaxSkew = 100 * time.Millisecond
	}
	return s
}

// String names the shard in messages: "shard 1 of 3" (indices from 0).
func (s Shard) String() string { return fmt.Sprintf("shard %d of %d", s.Index, s.Count) }
