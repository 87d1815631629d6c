package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Kinds of upstream failure; each is returned wrapped with details.
var (
	// errUpstreamTimeout: the upstream did not answer within the call timeout.
	errUpstreamTimeout = errors.New("upstream timed out")
	// errUpstreamFailed: no usable answer (transport error, HTTP status, bad JSON, too large).
	errUpstreamFailed = errors.New("upstream failed")
	// errCancelled: the caller went away (client disconnect or forced shutdown).
	errCancelled = errors.New("call cancelled")
)

// upstream sends JSON-RPC requests to connectors' upstream servers, in one
// of two runtime models (Config.UpstreamMode):
//
//   - async: each request runs on its caller's goroutine over a shared,
//     keep-alive connection pool; any number at once.
//   - sync: a fixed pool of workers, each held for a whole round trip;
//     requests queue for a free worker (the queue wait counts towards the
//     timeout).
type upstream struct {
	mode     string
	client   *http.Client
	timeout  time.Duration
	maxBytes int64
	nextID   atomic.Int64

	jobs   chan *upstreamJob // sync mode
	quit   chan struct{}
	wg     sync.WaitGroup
	queued atomic.Int64 // requests waiting for a worker
	active atomic.Int64 // requests in their round trip
}

type upstreamJob struct {
	ctx  context.Context
	url  string
	body []byte
	done chan upstreamResult // buffered 1: a worker never blocks on it
}

type upstreamResult struct {
	body []byte
	err  error
}

func newUpstream(cfg Config) *upstream {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		ResponseHeaderTimeout: 0, // the call timeout bounds it
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
	if cfg.UpstreamMode == ModeSync {
		// Each worker holds one connection per upstream host.
		tr.MaxIdleConnsPerHost = cfg.Workers
		tr.MaxConnsPerHost = cfg.Workers
	}
	u := &upstream{
		mode:     cfg.UpstreamMode,
		client:   &http.Client{Transport: tr},
		timeout:  cfg.CallTimeout,
		maxBytes: cfg.MaxUpstreamBytes,
		quit:     make(chan struct{}),
	}
	if u.mode == ModeSync {
		u.jobs = make(chan *upstreamJob)
		for range cfg.Workers {
			u.wg.Add(1)
			go u.worker()
		}
	}
	return u
}

// close stops the workers and closes idle connections.
func (u *upstream) close() {
	close(u.quit)
	u.wg.Wait()
	u.client.CloseIdleConnections()
}

func (u *upstream) worker() {
	defer u.wg.Done()
	for {
		select {
		case <-u.quit:
			return
		case j := <-u.jobs:
			u.queued.Add(-1)
			if err := j.ctx.Err(); err != nil {
				j.done <- upstreamResult{err: err}
				continue
			}
			body, err := u.roundTrip(j.ctx, j.url, j.body)
			j.done <- upstreamResult{body: body, err: err}
		}
	}
}

// rpc sends one JSON-RPC request and returns the raw result and the size
// of the answer in bytes. The error wraps errUpstreamTimeout,
// errUpstreamFailed or errCancelled, or is an *rpcError from the upstream.
func (u *upstream) rpc(ctx context.Context, url, method string, params any) (json.RawMessage, int64, error) {
	body, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", u.nextID.Add(1), method, params})
	if err != nil {
		return nil, 0, fmt.Errorf("%w: encode request: %v", errUpstreamFailed, err)
	}
	cctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	answer, err := u.do(cctx, url, body)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, 0, fmt.Errorf("%w: %v", errCancelled, context.Cause(ctx))
		case cctx.Err() != nil:
			return nil, 0, fmt.Errorf("%w after %s", errUpstreamTimeout, u.timeout)
		}
		return nil, int64(len(answer)), err
	}
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(answer, &resp); err != nil {
		return nil, int64(len(answer)), fmt.Errorf("%w: the answer is not JSON-RPC: %v", errUpstreamFailed, err)
	}
	if resp.Error != nil {
		return nil, int64(len(answer)), resp.Error
	}
	if len(resp.Result) == 0 {
		return nil, int64(len(answer)), fmt.Errorf("%w: the answer has neither result nor error", errUpstreamFailed)
	}
	return resp.Result, int64(len(answer)), nil
}

// do runs one round trip in the configured mode.
func (u *upstream) do(ctx context.Context, url string, body []byte) ([]byte, error) {
	if u.mode != ModeSync {
		return u.roundTrip(ctx, url, body)
	}
	j := &upstreamJob{ctx: ctx, url: url, body: body, done: make(chan upstreamResult, 1)}
	u.queued.Add(1)
	select {
	case u.jobs <- j:
	case <-ctx.Done():
		u.queued.Add(-1)
		return nil, ctx.Err()
	case <-u.quit:
		u.queued.Add(-1)
		return nil, fmt.Errorf("%w: the relay is shutting down", errUpstreamFailed)
	}
	select {
	case r := <-j.done:
		return r.body, r.err
	case <-ctx.Done():
		// The worker sees the same context and gives up its round trip.
		return nil, ctx.Err()
	}
}

// roundTrip POSTs body to url and returns the answer's body.
func (u *upstream) roundTrip(ctx context.Context, url string, body []byte) ([]byte, error) {
	u.active.Add(1)
	defer u.active.Add(-1)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: connector URL %q: %v", errUpstreamFailed, url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUpstreamFailed, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, fmt.Errorf("%w: HTTP %d", errUpstreamFailed, resp.StatusCode)
	}
	var buf []byte
	if resp.ContentLength > 0 && resp.ContentLength <= u.maxBytes {
		buf = make([]byte, 0, resp.ContentLength+1)
	}
	b := bytes.NewBuffer(buf)
	n, err := b.ReadFrom(io.LimitReader(resp.Body, u.maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the answer: %v", errUpstreamFailed, err)
	}
	if n > u.maxBytes {
		return nil, fmt.Errorf("%w: the answer is larger than %s bytes (RELAY_MAX_UPSTREAM_BYTES)", errUpstreamFailed, strconv.FormatInt(u.maxBytes, 10))
	}
	return b.Bytes(), nil
}
