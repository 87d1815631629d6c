package server

import (
	"context"
	"sync"
)

// inflight counts requests being served, so a drain can wait for them.
type inflight struct {
	mu   sync.Mutex
	n    int64
	idle chan struct{} // closed while n == 0
}

func newInflight() *inflight {
	ch := make(chan struct{})
	close(ch)
	return &inflight{idle: ch}
}

// begin counts one more request.
func (f *inflight) begin() {
	f.mu.Lock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
}

// end counts one request less.
func (f *inflight) end() {
	f.mu.Lock()
	f.n--
	if f.n == 0 {
		close(f.idle)
	}
	f.mu.Unlock()
}

// count returns the number of requests being served.
func (f *inflight) count() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait returns nil once no request is being served, or ctx's error.
func (f *inflight) wait(ctx context.Context) error {
	for {
		f.mu.Lock()
		idle, n := f.idle, f.n
		f.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
