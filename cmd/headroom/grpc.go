package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/grpcc"
)

// grpcFlags are the flags of headroom run -grpc.
type grpcFlags struct {
	target, method, body, protoSet string
	inFlight                       int // calls in flight at most (-conns)
	timeout                        time.Duration
	caPEM                          []byte
	insecure                       bool
}

// callsPerConn is how many calls the pool runs on one connection: below
// the 100 streams most servers allow at once, so that grpc-go never
// queues a call out of sight.
const callsPerConn = 100

// grpcKind is the gRPC method of the run's flags: its descriptors read
// from -proto-set or asked of the server by reflection, its request
// checked against them before any load.
func grpcKind(f grpcFlags) (cliKind, error) {
	u, err := url.Parse(f.target)
	if err != nil {
		return cliKind{}, err
	}
	opts := grpcc.Options{Conns: (f.inFlight + callsPerConn - 1) / callsPerConn, MaxInFlight: f.inFlight, Timeout: f.timeout}
	if u.Scheme == "grpcs" {
		opts.TLS = &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: f.insecure}
		if len(f.caPEM) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(f.caPEM) {
				return cliKind{}, &exitError{exitUsage, errors.New("-ca: no PEM certificate in the file")}
			}
			opts.TLS.RootCAs = pool
		}
	}
	gc, err := grpcc.New(u.Host, opts)
	if err != nil {
		return cliKind{}, &exitError{exitUsage, err}
	}
	fail := func(err error) (cliKind, error) {
		gc.Close()
		return cliKind{}, err
	}
	var d *grpcc.Descriptors
	if f.protoSet != "" {
		if d, err = grpcc.LoadDescriptors(f.protoSet); err != nil {
			return fail(&exitError{exitUsage, err})
		}
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		service, _, _ := cutMethod(f.method)
		if d, err = grpcc.Reflect(ctx, gc.Conn(), service); err != nil {
			return fail(&exitError{exitUsage, fmt.Errorf("%w; start the service, fix -url, or describe the method with -proto-set", err)})
		}
	}
	call, err := d.Unary(f.method, f.body)
	if err != nil {
		return fail(&exitError{exitUsage, fmt.Errorf("%w (flags -grpc, -body)", err)})
	}
	_, name, _ := cutMethod(f.method)
	return cliKind{name: name, do: gc.Func(call), close: func() { gc.Close() },
		preflight: func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			r := gc.Call(ctx, call)
			switch r.Outcome {
			case loadtest.TransportError, loadtest.Timeout:
				return &exitError{exitUsage, fmt.Errorf("nothing answers at %s (%s: %v); start the service or fix -url", f.target, r.Outcome, r.Err)}
			}
			return nil
		}}, nil
}

// cutMethod splits "package.Service/Method" (or "/package.Service/Method").
func cutMethod(m string) (service, method string, ok bool) {
	if len(m) > 0 && m[0] == '/' {
		m = m[1:]
	}
	for i := len(m) - 1; i >= 0; i-- {
		if m[i] == '/' {
			return m[:i], m[i+1:], true
		}
	}
	return m, m, false
}
