package grpcc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"google.golang.org/grpc"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
)

// Descriptors are a service's message and method descriptions, for calls
// to a service without Go stubs: read from a descriptor set
// (LoadDescriptors) or asked of the server (Reflect).
type Descriptors struct {
	files *protoregistry.Files
}

// LoadDescriptors reads a FileDescriptorSet written by
// `protoc --include_imports --descriptor_set_out=FILE` or `buf build -o FILE`.
func LoadDescriptors(path string) (*Descriptors, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("grpcc: descriptor set: %w", err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("grpcc: %s is not a FileDescriptorSet (write one with protoc --include_imports --descriptor_set_out, or buf build -o): %w", path, err)
	}
	return newDescriptors(set.File, path)
}

func newDescriptors(fds []*descriptorpb.FileDescriptorProto, from string) (*Descriptors, error) {
	files, err := protodesc.NewFiles(&descriptorpb.FileDescriptorSet{File: fds})
	if err != nil {
		return nil, fmt.Errorf("grpcc: the descriptors of %s do not resolve (a descriptor set needs --include_imports): %w", from, err)
	}
	return &Descriptors{files: files}, nil
}

// Reflect asks the server at cc, by the gRPC server reflection protocol
// (grpc.reflection.v1), for the files that describe service
// ("package.Service"): for a server that registers reflection
// (reflection.Register in grpc-go) and ships no descriptor set.
func Reflect(ctx context.Context, cc grpc.ClientConnInterface, service string) (*Descriptors, error) {
	s, err := rpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("grpcc: server reflection: %w", err)
	}
	defer s.CloseSend()
	seen := map[string]bool{}
	var fds []*descriptorpb.FileDescriptorProto
	ask := []*rpb.ServerReflectionRequest{{MessageRequest: &rpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: service}}}
	for len(ask) > 0 {
		req := ask[0]
		ask = ask[1:]
		if err := s.Send(req); err != nil {
			return nil, fmt.Errorf("grpcc: server reflection: %w", err)
		}
		r, err := s.Recv()
		if err != nil {
			return nil, fmt.Errorf("grpcc: server reflection (does the server register it?): %w", err)
		}
		if e := r.GetErrorResponse(); e != nil {
			return nil, fmt.Errorf("grpcc: server reflection of %q: %s", service, e.GetErrorMessage())
		}
		for _, b := range r.GetFileDescriptorResponse().GetFileDescriptorProto() {
			fd := new(descriptorpb.FileDescriptorProto)
			if err := proto.Unmarshal(b, fd); err != nil {
				return nil, fmt.Errorf("grpcc: server reflection: a file descriptor: %w", err)
			}
			if seen[fd.GetName()] {
				continue
			}
			seen[fd.GetName()] = true
			fds = append(fds, fd)
		}
		// A server may answer with the file alone: ask for what it imports.
		for _, fd := range fds {
			for _, dep := range fd.GetDependency() {
				if !seen[dep] {
					seen[dep] = true
					ask = append(ask, &rpb.ServerReflectionRequest{MessageRequest: &rpb.ServerReflectionRequest_FileByFilename{FileByFilename: dep}})
				}
			}
		}
	}
	if err := s.CloseSend(); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return newDescriptors(fds, "the server's reflection")
}

// Unary returns a call of a unary method ("package.Service/Method", or
// with a leading slash) with the request written as protobuf JSON, for
// Client.Func. The method and the request are checked now: a method the
// descriptors lack, or a request that does not fit its message, is an
// error naming what there is.
func (d *Descriptors) Unary(method, requestJSON string) (func(ctx context.Context, cc grpc.ClientConnInterface) error, error) {
	md, err := d.method(method)
	if err != nil {
		return nil, err
	}
	if md.IsStreamingClient() || md.IsStreamingServer() {
		return nil, fmt.Errorf("grpcc: %s streams; Unary calls unary methods only", md.FullName())
	}
	req := dynamicpb.NewMessage(md.Input())
	if requestJSON != "" {
		if err := protojson.Unmarshal([]byte(requestJSON), req); err != nil {
			return nil, fmt.Errorf("grpcc: the request for %s is not a %s in protobuf JSON: %w", md.FullName(), md.Input().FullName(), err)
		}
	}
	path := "/" + string(md.Parent().FullName()) + "/" + string(md.Name())
	out := md.Output()
	return func(ctx context.Context, cc grpc.ClientConnInterface) error {
		return cc.Invoke(ctx, path, req, dynamicpb.NewMessage(out))
	}, nil
}

// method finds "package.Service/Method".
func (d *Descriptors) method(name string) (protoreflect.MethodDescriptor, error) {
	svc, m, ok := strings.Cut(strings.TrimPrefix(name, "/"), "/")
	if !ok {
		svc, m, ok = cutLast(name, ".")
	}
	if !ok || svc == "" || m == "" {
		return nil, fmt.Errorf("grpcc: method %q: give it as package.Service/Method", name)
	}
	desc, err := d.files.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, fmt.Errorf("grpcc: no service %s in the descriptors (services: %s)", svc, strings.Join(d.services(), ", "))
	}
	sd, isSvc := desc.(protoreflect.ServiceDescriptor)
	if !isSvc {
		return nil, fmt.Errorf("grpcc: %s is not a service (services: %s)", svc, strings.Join(d.services(), ", "))
	}
	md := sd.Methods().ByName(protoreflect.Name(m))
	if md == nil {
		var names []string
		for i := range sd.Methods().Len() {
			names = append(names, string(sd.Methods().Get(i).Name()))
		}
		return nil, fmt.Errorf("grpcc: %s has no method %s (it has %s)", svc, m, strings.Join(names, ", "))
	}
	return md, nil
}

func (d *Descriptors) services() []string {
	var out []string
	d.files.RangeFiles(func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			out = append(out, string(f.Services().Get(i).FullName()))
		}
		return true
	})
	sort.Strings(out)
	return out
}

func cutLast(s, sep string) (before, after string, found bool) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):], true
	}
	return s, "", false
}
