// Package seed streams rows into any table of PostgreSQL or SQLite fast,
// for the data a load test needs before it starts.
//
// [Copy] is the bulk loader: rows come from a Go generator function one at
// a time (no slice of all rows is built) and go to PostgreSQL through COPY
// (pgx CopyFrom) or to SQLite as batched multi-row INSERTs in one
// transaction, with progress reported through a logf such as t.Logf during
// long loads. A load is atomic: on an error nothing is written.
//
//	n, err := seed.Copy(ctx, seed.Postgres(pool), "orders", []string{"id", "sku", "qty"}, rows,
//		seed.WithLogf(t.Logf), seed.WithExpectedRows(1_000_000))
//
// A product's seeder that writes several tables, checks what is already
// there and records what it wrote does it all in one transaction with
// [DB.InTx]: a failure part-way leaves nothing behind. A [DB] comes from a
// pgx handle ([Postgres]), a database/sql SQLite handle ([SQLite]) or a URL
// ([Open]); [Secret] keeps a population's credential out of logs.
//
// The reference products' populations are built on it:
// examples/relay/relayseed (workspaces, users with tokens, connectors and a
// month of tool calls for the relay) and examples/desk/deskseed.
package seed
