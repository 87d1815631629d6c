// Package grpcgreeter load-tests a gRPC server nobody here wrote — grpc-go's
// reflection example (a Greeter and an Echo service, and server
// reflection), built from the Go module proxy — with Headroom from a module
// of its own. See README.md.
package grpcgreeter
