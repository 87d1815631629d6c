// Package seed fills a database with deterministic data populations and
// streams rows into any table fast.
//
// A population is described by a [Spec]: workspaces, users (each with a
// bearer token derived from the spec's secret by [Token]), connectors per
// user pointing at an upstream URL, a history of recorded tool calls (usage
// rows) spread over some days with realistic distributions, and events.
// [Apply] writes it into the relay's schema (package
// examples/relay/schema) on PostgreSQL or SQLite:
//
//	spec := seed.Published                 // ~500,000 usage rows over 30 days
//	spec.Secret = secret                   // never logged, never hashed
//	spec.UpstreamURL = upstream.URL + "/mcp"
//	spec.End = time.Now()                  // the dashboard's window ends now
//	pop, err := seed.Apply(ctx, seed.Postgres(pool), spec, seed.WithLogf(t.Logf))
//
// The same spec (seed included) gives byte-identical rows on every run and
// on both dialects. Apply is idempotent: a seed_marker row, written in the
// same transaction as the data, records the spec's hash ([Spec.Hash]); the
// same spec again is a no-op, a different spec is an error until [Remove]
// takes the old population out. Nothing is written when the spec is invalid
// or the database cannot be reached, and a failure part-way rolls back.
//
// [Copy] is the bulk loader underneath, for any table: rows come from a Go
// generator function one at a time (no slice of all rows is built) and go
// to PostgreSQL through COPY (pgx CopyFrom) or to SQLite as batched
// multi-row INSERTs in one transaction, with progress reported through a
// logf such as t.Logf during long loads.
package seed
