package grpcc_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/grpcc"
)

// TestCallsWithoutStubs calls the health service from its descriptor set,
// written as protoc --descriptor_set_out would, and from what the server
// answers by reflection: each call's outcome is what the request asks.
func TestCallsWithoutStubs(t *testing.T) {
	h := &health{}
	addr := serve(t, h, func(s *grpc.Server) { reflection.Register(s) })
	gc, err := grpcc.New(addr, grpcc.Options{})
	require.NoError(t, err)
	defer gc.Close()

	set := &descriptorpb.FileDescriptorSet{File: []*descriptorpb.FileDescriptorProto{protodesc.ToFileDescriptorProto(healthpb.File_grpc_health_v1_health_proto)}}
	b, err := proto.Marshal(set)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "health.pb")
	require.NoError(t, os.WriteFile(path, b, 0o644))
	fromFile, err := grpcc.LoadDescriptors(path)
	require.NoError(t, err)
	fromServer, err := grpcc.Reflect(t.Context(), gc.Conn(), "grpc.health.v1.Health")
	require.NoError(t, err)

	for name, d := range map[string]*grpcc.Descriptors{"file": fromFile, "reflection": fromServer} {
		ok, err := d.Unary("grpc.health.v1.Health/Check", `{"service": ""}`)
		require.NoError(t, err, name)
		assert.Equal(t, loadtest.OK, gc.Call(t.Context(), ok).Outcome, name)
		notFound, err := d.Unary("/grpc.health.v1.Health/Check", `{"service": "code=5"}`)
		require.NoError(t, err, name)
		r := gc.Call(t.Context(), notFound)
		assert.Equal(t, loadtest.AppError, r.Outcome, "%s: %v", name, r.Err)
		assert.ErrorContains(t, r.Err, "asked for NotFound", name)

		_, err = d.Unary("grpc.health.v1.Health/Nope", "")
		assert.ErrorContains(t, err, "grpc.health.v1.Health has no method Nope (it has Check, ", name)
		_, err = d.Unary("grpc.health.v1.Sickness/Check", "")
		assert.ErrorContains(t, err, "no service grpc.health.v1.Sickness in the descriptors (services: grpc.health.v1.Health)", name)
		_, err = d.Unary("grpc.health.v1.Health/Check", `{"servce": ""}`)
		assert.ErrorContains(t, err, "is not a grpc.health.v1.HealthCheckRequest in protobuf JSON", name)
		_, err = d.Unary("grpc.health.v1.Health/Watch", "")
		assert.ErrorContains(t, err, "streams", name)
	}
	assert.Equal(t, int64(4), h.calls.Load())

	_, err = grpcc.LoadDescriptors(filepath.Join(t.TempDir(), "none.pb"))
	assert.ErrorContains(t, err, "descriptor set")
	junk := filepath.Join(t.TempDir(), "junk.pb")
	require.NoError(t, os.WriteFile(junk, []byte("not protobuf at all"), 0o644))
	_, err = grpcc.LoadDescriptors(junk)
	assert.ErrorContains(t, err, "is not a FileDescriptorSet")

	bare := serve(t, &health{}) // no reflection
	bc, err := grpcc.New(bare, grpcc.Options{})
	require.NoError(t, err)
	defer bc.Close()
	_, err = grpcc.Reflect(t.Context(), bc.Conn(), "grpc.health.v1.Health")
	assert.ErrorContains(t, err, "does the server register it?")
}
