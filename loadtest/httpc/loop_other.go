//go:build !linux || !(amd64 || arm64)

package httpc

import (
	"errors"
	"runtime"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// loopSys is Linux's (see loop_linux.go).
type loopSys struct{}

// loopRef and loopConn are Linux's (see loop_linux.go).
type (
	loopRef  struct{}
	loopConn struct{}
)

func (l *Loop) open() error {
	return errors.New("httpc: the event loop runs on Linux on amd64 and arm64 (epoll), not on " + runtime.GOOS + "/" + runtime.GOARCH + ": send with Client.Func (Kind.Do)")
}

func (l *Loop) free() {}

// Wake implements loadtest.EventLoop.
func (l *Loop) Wake() {}

// Send implements loadtest.EventLoop.
func (l *Loop) Send(kind, id int, timeout time.Duration) {}

// Wait implements loadtest.EventLoop.
func (l *Loop) Wait(until time.Time, done func(id int, resp loadtest.Response, at time.Time)) {}

// Close implements loadtest.EventLoop.
func (l *Loop) Close() {}
