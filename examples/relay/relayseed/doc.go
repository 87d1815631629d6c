// Package relayseed fills the relay's database (examples/relay/schema) with
// a deterministic population on PostgreSQL or SQLite, for load tests of the
// relay.
//
// A population is described by a [Spec]: workspaces, users (each with a
// bearer token derived from the spec's secret by [Token]), connectors per
// user pointing at an upstream URL, a history of recorded tool calls (usage
// rows) spread over some days with realistic distributions, and events.
// [Apply] writes it:
//
//	spec := relayseed.Published            // ~500,000 usage rows over 30 days
//	spec.Secret = secret                   // never logged, never hashed
//	spec.UpstreamURL = upstream.URL + "/mcp"
//	spec.End = time.Now()                  // the dashboard's window ends now
//	pop, err := relayseed.Apply(ctx, seed.Postgres(pool), spec, relayseed.WithLogf(t.Logf))
//
// The same spec (seed included) gives byte-identical rows on every run and
// on both dialects. Apply is idempotent: a seed_marker row, written in the
// same transaction as the data, records the spec's hash ([Spec.Hash]); the
// same spec again is a no-op, a different spec is an error until [Remove]
// takes the old population out. Nothing is written when the spec is invalid
// or the database cannot be reached, and a failure part-way rolls back.
//
// It is built on the framework's generic loader, package seed: each table
// is one [seed.Tx.Copy] inside one [seed.DB.InTx]. A team seeding its own
// service writes the same few pieces for its own tables.
package relayseed
