// Package k8s holds the test that shard's Kubernetes manifests decode
// strictly into the Kubernetes API types. It is a package of its own so
// that those types — tens of thousands of generated lines — are built
// only for it, and not again for the race detector with the rest of the
// core (make unit runs the core under -race).
package k8s
