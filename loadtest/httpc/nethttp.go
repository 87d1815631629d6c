package httpc

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// newStdClient returns the tuned net/http client used for HTTP/2 and for
// Options.NetHTTP: bounded connections per host, as many idle ones kept,
// no compression, dials through d.
func newStdClient(o Options, d *Dialer) *http.Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialTCP(ctx, addr)
		},
		TLSClientConfig:     d.TLS,
		TLSHandshakeTimeout: o.DialTimeout,
		MaxConnsPerHost:     o.MaxConnsPerHost,
		MaxIdleConnsPerHost: o.MaxConnsPerHost,
		MaxIdleConns:        0, // no global limit
		IdleConnTimeout:     max(o.IdleTimeout, 0),
		DisableCompression:  true,
		ForceAttemptHTTP2:   o.HTTP2,
		WriteBufferSize:     o.WriteBufferSize,
		ReadBufferSize:      o.ReadBufferSize,
	}
	if o.HTTP2 {
		p := new(http.Protocols)
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true) // h2c with prior knowledge for http:// URLs
		tr.Protocols = p
	}
	return &http.Client{
		Transport: tr,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a load generator reports 3xx, never follows it
		},
	}
}

var discardBufs = sync.Pool{New: func() any { b := make([]byte, 16<<10); return &b }}

// exchangeStd is Exchange on the net/http engine.
func (c *Client) exchangeStd(ctx context.Context, r *Request, call *Call) loadtest.Response {
	timeout := c.opts.Timeout
	if call != nil && call.Timeout > 0 {
		timeout = call.Timeout
	}
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	req := r.std.WithContext(ctx)
	body := r.body
	if call != nil && call.Path != "" {
		if err := checkPath(call.Path); err != nil {
			return ErrorResponse(err)
		}
		ref, err := url.ParseRequestURI(call.Path)
		if err != nil {
			return ErrorResponse(NewProtocolError("httpc: Call.Path does not parse: "+err.Error(), []byte(call.Path)))
		}
		u := *req.URL
		u.Path, u.RawPath, u.RawQuery = ref.Path, ref.RawPath, ref.RawQuery
		req.URL = &u
	}
	if call != nil {
		if call.Body != nil {
			body = call.Body
		}
		if len(call.Header) > 0 {
			req.Header = req.Header.Clone()
			for _, h := range call.Header {
				req.Header.Add(h.Name, h.Value)
			}
		}
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := c.std.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = context.DeadlineExceeded
		}
		return ErrorResponse(err)
	}
	defer resp.Body.Close()
	if call != nil {
		call.Status = resp.StatusCode
		for i, name := range call.Capture {
			call.Captured[i] = resp.Header.Get(name)
		}
	}
	var n int64
	if call != nil && call.KeepBody {
		buf := bytes.NewBuffer(call.RespBody[:0])
		n, err = buf.ReadFrom(io.LimitReader(resp.Body, int64(c.opts.MaxBodySize)+1))
		call.RespBody = buf.Bytes()
		if err == nil && n > int64(c.opts.MaxBodySize) {
			call.RespBody = call.RespBody[:c.opts.MaxBodySize]
			m, _ := io.Copy(io.Discard, resp.Body)
			r := ErrorResponse(errBodyTooLarge)
			r.Bytes = n + m
			return r
		}
	} else {
		bp := discardBufs.Get().(*[]byte)
		n, err = io.CopyBuffer(io.Discard, readerOnly{resp.Body}, *bp)
		discardBufs.Put(bp)
	}
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			err = context.DeadlineExceeded
		}
		r := ErrorResponse(err)
		r.Bytes = n
		return r
	}
	return r.answer(resp.StatusCode, n)
}

// readerOnly hides WriterTo so CopyBuffer uses the pooled buffer.
type readerOnly struct{ io.Reader }
