package sse

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// Sample kinds the streams record into Config.Sink.
const (
	// KindConnect is dial to response head, one sample per attempt, with
	// the attempt's outcome (an HTTP status, a transport error, a timeout).
	KindConnect = "sse_connect"
	// KindFirstEvent is dial to the first event of a connection.
	KindFirstEvent = "sse_first_event"
	// DefaultFanoutKind is the default kind of fan-out delay samples.
	DefaultFanoutKind = "fanout"
	// KindStream is one sample per connection that ended: how long it was
	// held, OK when the run ended it, TransportError when it dropped,
	// ProtocolError when its framing broke.
	KindStream = "sse_stream"
	// KindHealth is a Timeout sample each time a connected stream stays
	// silent (no event, comment or byte) for twice KeepaliveInterval.
	KindHealth = "sse_health"
	// KindMalformed is a ProtocolError sample for each violation inside a
	// stream (oversize event, non-numeric retry, invalid UTF-8, a wrong
	// content type, a written time that does not parse), with an excerpt
	// in Err.
	KindMalformed = "sse_malformed"
	// KindDelivery is one sample per expected event (Stream.Expect,
	// Stream.ExpectID): OK when the event arrives, with the time from the
	// expectation to its receipt (0 when it came first); AppError when it
	// has not arrived within Config.DeliveryTimeout, with the time waited
	// and an Err naming what is missing. Through a Sink that can begin
	// observations (a *loadtest.Recorder or *loadtest.User), the sample
	// belongs to the step in which the expectation was made, and the step
	// waits for it; through another Sink it is recorded when its fate is
	// known. An expected event still within the timeout when its stream
	// stops records nothing.
	KindDelivery = "sse_delivery"
)

// Defaults of Config fields left zero.
const (
	// DefaultBufferSize is the default read buffer per stream in bytes; a
	// response head must fit in it.
	DefaultBufferSize = 2 << 10
	// DefaultConnectTimeout bounds dial, TLS and response head.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultMinBackoff is the first wait before reconnecting.
	DefaultMinBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the wait before reconnecting.
	DefaultMaxBackoff = 5 * time.Second
	// DefaultDeliveryTimeout is how long an expected event may take to
	// arrive before it is judged missing: well above a healthy target's
	// fan-out delay (milliseconds to a few seconds under load), well
	// inside a scenario's default Drain (30 s).
	DefaultDeliveryTimeout = 10 * time.Second
	// DefaultClockName describes the default clocks of fan-out samples.
	DefaultClockName = "receipt: generator wall clock (time.Now); written: the target's written_at (same host clock on one machine)"
)

// Config describes the streams of a Group. The zero value of each field
// takes the documented default; URL is required.
type Config struct {
	// URL is the stream's http or https URL.
	URL string
	// Header holds request headers sent on every stream of the group,
	// such as Authorization; Accept, Last-Event-ID and, with a Body,
	// Content-Length are added by the stream.
	Header []httpc.Header
	// Method is the request's method. Empty means GET; a stream opened by
	// a request with a body, such as MCP's subscriptions/listen, is a
	// POST.
	Method string
	// Body is the request's body, sent on every connection of every
	// stream of the group (give its Content-Type in Header); nil sends
	// none.
	Body []byte
	// Accept is the Accept header. Empty means "text/event-stream".
	Accept string
	// Dialer opens connections (TLS roots, source addresses); nil means a
	// default httpc.Dialer with the system roots.
	Dialer *httpc.Dialer
	// Dial, when set, replaces Dialer (tests use net.Pipe). It returns a
	// ready connection, TLS included when secure.
	Dial func(ctx context.Context, addr string, secure bool, serverName string) (net.Conn, error)
	// ConnectTimeout bounds dial plus response head. Zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// KeepaliveInterval is how often the target promises a keepalive
	// comment or event; a stream silent for twice this is counted
	// unhealthy. Zero disables the health check.
	KeepaliveInterval time.Duration
	// MaxEventSize limits one event in bytes. Zero means
	// DefaultMaxEventSize.
	MaxEventSize int
	// BufferSize is the read buffer per stream in bytes. Zero means
	// DefaultBufferSize.
	BufferSize int
	// MinBackoff is the first wait before reconnecting a dropped stream
	// (a retry field from the target raises it); it doubles per failed
	// attempt. Zero means DefaultMinBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the wait before reconnecting. Zero means
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Sink receives the samples (see the Kind constants); nil records
	// nothing, counters still count. When it also has the method
	// Begin(kind string) *loadtest.Pending, as *loadtest.Recorder and
	// *loadtest.User do, each expected event is observed from the
	// expectation on, so that its KindDelivery sample belongs to the step
	// in which it was expected (see Stream.Expect).
	Sink loadtest.Sink
	// FanoutKind names fan-out delay samples. Empty means
	// DefaultFanoutKind.
	FanoutKind string
	// WrittenAt extracts the time the target wrote an event; it returns
	// ErrNoWrittenAt for an event that carries none, and any other error
	// for one that does not parse (a KindMalformed sample). Nil means
	// WrittenAtField("written_at"): a JSON string field with an RFC 3339
	// time in the data.
	WrittenAt func(ev Event) (time.Time, error)
	// Now is the clock that stamps receipt times and times expectations
	// and their deadlines. Nil means time.Now. A KindDelivery sample
	// recorded through a Sink's Begin takes its latency from the core's
	// clock instead (time.Now from Begin to End), which is the same clock
	// unless Now is replaced.
	Now func() time.Time
	// ClockName describes the clocks fan-out uses, for the result. Empty
	// means DefaultClockName.
	ClockName string
	// DeliveryTimeout is how long an expected event (Stream.Expect,
	// ExpectID) may take to arrive; once it has passed, the event is
	// judged missing at once, an AppError KindDelivery sample, while the
	// stream goes on. Keep it within the scenario's Drain, which is how
	// long a step waits for the events expected during its hold. Zero
	// means DefaultDeliveryTimeout; a negative value disables the
	// deadline, and Close judges whatever is still missing, recording it
	// then (no step waits for an event without a deadline).
	DeliveryTimeout time.Duration
	// Match, when set, says which events count for Expect and ExpectID,
	// such as the publications of a stream that also carries a connect
	// frame and pings; nil means every event. Every event still counts in
	// Stats.Events and may carry a fan-out time.
	Match func(ev Event) bool
	// TrackIDs remembers the ids of events received so that ExpectID also
	// matches events that arrived before they were expected. It costs
	// memory per event received.
	TrackIDs bool
	// OnEvent, when set, is called for every event with its receipt time,
	// from the stream's goroutine. The event's slices are valid only
	// during the call.
	OnEvent func(s *Stream, ev Event, received time.Time)
}

// target is the parsed URL of a Config.
type target struct {
	addr, host, path string
	secure           bool
}

func (c Config) withDefaults() (Config, target, error) {
	var t target
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		return c, t, fmt.Errorf("sse: URL %q does not parse (%v); give an absolute URL such as http://127.0.0.1:8080/events", c.URL, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return c, t, fmt.Errorf("sse: URL %q has scheme %q; use http or https", c.URL, u.Scheme)
	case u.Host == "":
		return c, t, fmt.Errorf("sse: URL %q has no host; give an absolute URL", c.URL)
	case c.ConnectTimeout < 0, c.KeepaliveInterval < 0, c.MinBackoff < 0, c.MaxBackoff < 0:
		return c, t, fmt.Errorf("sse: negative duration in Config (ConnectTimeout %v, KeepaliveInterval %v, MinBackoff %v, MaxBackoff %v); use 0 for the default", c.ConnectTimeout, c.KeepaliveInterval, c.MinBackoff, c.MaxBackoff)
	case c.BufferSize != 0 && c.BufferSize < 256:
		return c, t, fmt.Errorf("sse: BufferSize %d is below 256 bytes; use 0 for the default %d", c.BufferSize, DefaultBufferSize)
	case containsAny(c.Method, " \r\n") || containsAny(c.Accept, "\r\n"):
		return c, t, fmt.Errorf("sse: Method %q or Accept %q holds a space or line break; give a method such as POST and a media range such as text/event-stream", c.Method, c.Accept)
	case c.MaxEventSize < 0:
		return c, t, fmt.Errorf("sse: MaxEventSize %d is negative; use 0 for the default %d", c.MaxEventSize, DefaultMaxEventSize)
	}
	t.secure = u.Scheme == "https"
	t.host = u.Host
	t.path = u.RequestURI()
	t.addr = u.Host
	if u.Port() == "" {
		port := "80"
		if t.secure {
			port = "443"
		}
		t.addr = net.JoinHostPort(u.Hostname(), port)
	}
	for _, h := range c.Header {
		if h.Name == "" || containsAny(h.Name, " :\r\n") || containsAny(h.Value, "\r\n") {
			return c, t, fmt.Errorf("sse: header %q is not a valid field; remove line breaks and colons from its name", h.Name)
		}
	}
	if c.Method == "" {
		c.Method = "GET"
	}
	if c.Accept == "" {
		c.Accept = "text/event-stream"
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.MaxEventSize == 0 {
		c.MaxEventSize = DefaultMaxEventSize
	}
	if c.BufferSize == 0 {
		c.BufferSize = DefaultBufferSize
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	if c.DeliveryTimeout == 0 {
		c.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if c.FanoutKind == "" {
		c.FanoutKind = DefaultFanoutKind
	}
	if c.WrittenAt == nil {
		c.WrittenAt = WrittenAtField("written_at")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ClockName == "" {
		c.ClockName = DefaultClockName
	}
	if c.Dial == nil {
		d := c.Dialer
		if d == nil {
			d = &httpc.Dialer{}
		}
		c.Dial = d.Dial
	}
	return c, t, nil
}

func containsAny(s, chars string) bool {
	for i := range len(s) {
		for j := range len(chars) {
			if s[i] == chars[j] {
				return true
			}
		}
	}
	return false
}
