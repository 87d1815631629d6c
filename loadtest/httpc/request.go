package httpc

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
)

// Header is one request header field.
type Header struct {
	// Name is the field name, such as "Authorization".
	Name string
	// Value is the field value.
	Value string
}

// Request is a prepared request: method, URL, fixed headers and body,
// rendered once into the bytes the lean engine writes. A Request is
// immutable and safe to send from many goroutines at once; per-call headers
// and bodies go in a Call.
type Request struct {
	// Method is the HTTP method, such as "GET".
	Method string
	// URL is the absolute http or https URL.
	URL string

	host     *hostPool
	head     []byte // request line, Host, fixed headers; no final CRLF
	target   [2]int // the request-target's bounds in head, for Call.Path
	body     []byte
	std      *http.Request // for the net/http engine
	noBody   bool          // HEAD: no response body
	replay   bool          // safe to resend on a stale connection
	hostPort string
	expect   Expect
}

// Expect is what an answer must be to count OK, beyond a 2xx status.
type Expect struct {
	// Status lists the status codes that count OK; empty means any 2xx. A
	// 3xx is a redirect the client does not follow: OK only when listed.
	// An answer of another 2xx or 3xx code is AppError; a 4xx or 5xx keeps
	// its HTTP outcome.
	Status []int
	// MinBytes is the fewest body bytes an OK answer has: one with fewer —
	// an empty 200 before the connection closed — is AppError. Not checked
	// for HEAD.
	MinBytes int64
}

// WithExpect returns a copy of r whose answers count OK only as e says.
func (r *Request) WithExpect(e Expect) *Request {
	c := *r
	c.expect = Expect{Status: append([]int(nil), e.Status...), MinBytes: e.MinBytes}
	return &c
}

// answer classifies an answer of status code and n body bytes by r's
// expectations.
func (r *Request) answer(code int, n int64) loadtest.Response {
	e := &r.expect
	if len(e.Status) > 0 && code >= 200 && code < 400 {
		if !slices.Contains(e.Status, code) {
			return loadtest.Response{Outcome: loadtest.AppError, Bytes: n, Err: fmt.Errorf("status %d, expected %s", code, statusList(e.Status))}
		}
	} else if resp := StatusResponse(code, n); resp.Outcome != loadtest.OK {
		return resp
	}
	if n < e.MinBytes && !r.noBody {
		return loadtest.Response{Outcome: loadtest.AppError, Bytes: n, Err: fmt.Errorf("answer of %d bytes, expected at least %d", n, e.MinBytes)}
	}
	return loadtest.Response{Outcome: loadtest.OK, Bytes: n}
}

// statusList prints codes as "200" or "one of 200, 204".
func statusList(codes []int) string {
	if len(codes) == 1 {
		return strconv.Itoa(codes[0])
	}
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = strconv.Itoa(c)
	}
	return "one of " + strings.Join(s, ", ")
}

// Call carries what varies per send of a prepared Request and receives what
// the caller wants back beyond the Response. Reusing one Call per
// goroutine keeps sends free of allocations.
type Call struct {
	// Header holds extra request headers for this send only, such as a
	// session id or X-Forwarded-For.
	Header []Header
	// Path, when set, replaces the prepared URL's path and query for this
	// send ("/items/42?full=1"), so that one prepared request serves every
	// record of a collection. It must start with "/" and hold no space or
	// line break; otherwise the send fails as a ProtocolError.
	Path string
	// Body, when non-nil, replaces the prepared body for this send.
	Body []byte
	// Timeout, when positive, replaces the client's per-request timeout
	// for this send.
	Timeout time.Duration
	// KeepBody keeps the response body in RespBody (up to the client's
	// MaxBodySize); otherwise the body is counted and discarded.
	KeepBody bool
	// Capture lists response header names whose values are kept in
	// Captured, in the same order (case-insensitive; "" when absent).
	Capture []string

	// Status is the response status code, or 0 when no answer came.
	Status int
	// RespBody is the response body when KeepBody is set; its backing
	// array is reused across sends.
	RespBody []byte
	// Captured holds the values of the Capture headers.
	Captured []string
}

// reset prepares the result fields of c for a new send.
func (c *Call) reset() {
	c.Status = 0
	c.RespBody = c.RespBody[:0]
	if cap(c.Captured) < len(c.Capture) {
		c.Captured = make([]string, len(c.Capture))
	}
	c.Captured = c.Captured[:len(c.Capture)]
	for i := range c.Captured {
		c.Captured[i] = ""
	}
}

// Prepare renders a request for sending with Do or Exchange. Method must be
// an HTTP token, URL an absolute http or https URL with a host; headers are
// sent on every send (Host, Content-Length and Transfer-Encoding are set by
// the client and may not be given); body may be nil.
func (c *Client) Prepare(method, rawURL string, headers []Header, body []byte) (*Request, error) {
	if method == "" || strings.ContainsAny(method, " \r\n\t") {
		return nil, fmt.Errorf("httpc: method %q is not an HTTP method; use e.g. \"GET\" or \"POST\"", method)
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("httpc: URL %q does not parse (%v); give an absolute URL such as http://127.0.0.1:8080/path", rawURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("httpc: URL %q has scheme %q; use http or https", rawURL, u.Scheme)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("httpc: URL %q has no host; give an absolute URL such as http://127.0.0.1:8080/path", rawURL)
	}
	hostPort := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			hostPort = net.JoinHostPort(u.Hostname(), "443")
		} else {
			hostPort = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	hasUA := false
	for _, h := range headers {
		if err := checkHeader(h); err != nil {
			return nil, err
		}
		switch http.CanonicalHeaderKey(h.Name) {
		case "Host", "Content-Length", "Transfer-Encoding":
			return nil, fmt.Errorf("httpc: header %q is set by the client; remove it from the prepared headers", h.Name)
		case "User-Agent":
			hasUA = true
		}
	}
	r := &Request{
		Method:   method,
		URL:      rawURL,
		body:     body,
		noBody:   method == http.MethodHead,
		hostPort: hostPort,
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodTrace:
		r.replay = true
	}
	r.replay = r.replay || c.opts.RetryPOST

	// The head is held as long as the Request (one per modeled user, often):
	// sized exactly, it is allocated once and wastes nothing.
	uri := u.RequestURI()
	size := len(method) + 1 + len(uri) + len(" HTTP/1.1\r\nHost: ") + len(u.Host) + 2
	if !hasUA {
		size += len("User-Agent: ") + len(c.opts.UserAgent) + 2
	}
	for _, h := range headers {
		size += len(h.Name) + 2 + len(h.Value) + 2
	}
	b := make([]byte, 0, size)
	b = append(b, method...)
	b = append(b, ' ')
	r.target[0] = len(b)
	b = append(b, uri...)
	r.target[1] = len(b)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, u.Host...)
	b = append(b, "\r\n"...)
	if !hasUA {
		b = append(b, "User-Agent: "...)
		b = append(b, c.opts.UserAgent...)
		b = append(b, "\r\n"...)
	}
	for _, h := range headers {
		b = appendHeader(b, h)
	}
	r.head = b

	if c.std != nil {
		sr, err := http.NewRequest(method, rawURL, nil)
		if err != nil {
			return nil, fmt.Errorf("httpc: %v", err)
		}
		for _, h := range headers {
			sr.Header.Add(h.Name, h.Value)
		}
		if !hasUA {
			sr.Header.Set("User-Agent", c.opts.UserAgent)
		}
		r.std = sr
	} else {
		r.host = c.pool(u.Scheme == "https", hostPort, u.Hostname())
	}
	return r, nil
}

func checkHeader(h Header) error {
	if h.Name == "" || strings.ContainsAny(h.Name, " :\r\n\t") {
		return fmt.Errorf("httpc: header name %q is not a field name; use e.g. \"Authorization\"", h.Name)
	}
	if strings.ContainsAny(h.Value, "\r\n") {
		return fmt.Errorf("httpc: header %s value contains a line break; remove it", h.Name)
	}
	return nil
}

func appendHeader(b []byte, h Header) []byte {
	b = append(b, h.Name...)
	b = append(b, ": "...)
	b = append(b, h.Value...)
	return append(b, "\r\n"...)
}

// appendHead appends the request's head up to its fixed headers, with the
// call's path when it has one.
func appendHead(b []byte, r *Request, call *Call) []byte {
	if call == nil || call.Path == "" {
		return append(b, r.head...)
	}
	b = append(b, r.head[:r.target[0]]...)
	b = append(b, call.Path...)
	return append(b, r.head[r.target[1]:]...)
}

// checkPath reports a Call.Path that would break the request line.
func checkPath(p string) error {
	if p == "" {
		return nil
	}
	if p[0] != '/' || strings.ContainsAny(p, " \t\r\n") {
		return NewProtocolError("httpc: Call.Path must start with / and hold no space or line break", []byte(p))
	}
	return nil
}

// appendTail appends the per-call headers, Content-Length and the blank
// line that ends the head.
func appendTail(b []byte, call *Call, bodyLen int, hasBody bool) []byte {
	if call != nil {
		for _, h := range call.Header {
			if strings.ContainsAny(h.Value, "\r\n") || strings.ContainsAny(h.Name, "\r\n: ") {
				continue // never let a per-call header break the framing
			}
			b = appendHeader(b, h)
		}
	}
	if hasBody {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(bodyLen), 10)
		b = append(b, "\r\n"...)
	}
	return append(b, "\r\n"...)
}
