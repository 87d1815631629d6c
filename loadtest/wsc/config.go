package wsc

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// Sample kinds the connections record into Config.Sink.
const (
	// KindConnect is dial to the end of the WebSocket handshake, one
	// sample per attempt, with the attempt's outcome: OK, an HTTP status
	// class when the target refused the upgrade, a transport error or a
	// timeout (Config.ConnectTimeout).
	KindConnect = "ws_connect"
	// DefaultFanoutKind is the default kind of fan-out delay samples.
	DefaultFanoutKind = "fanout"
	// KindConn is one sample per connection that ended, with how long it
	// was held as latency and CloseOutcome's verdict on how it ended: OK
	// for a normal closure or going away (and for our own close, unless
	// the target answered it with another code), AppError for a close
	// code such as 1011 (internal error), 1008 (policy) or 1013 (try again
	// later), with the code in Err, TransportError for an end without a
	// close frame.
	KindConn = "ws_conn"
	// KindMalformed is a ProtocolError sample for a pushed message whose
	// written time does not parse, with the error in Err.
	KindMalformed = "ws_malformed"
	// KindDelivery is one sample per expected message (Conn.Expect,
	// Conn.ExpectID): OK when the message arrives, with the time from the
	// expectation to its receipt (0 when it came first); AppError when it
	// has not arrived within Config.DeliveryTimeout, with the time waited
	// and an Err naming what is missing. Through a Sink that can begin
	// observations (a *loadtest.Recorder or *loadtest.User), the sample
	// belongs to the step in which the expectation was made, and the step
	// waits for it; through another Sink it is recorded when its fate is
	// known. An expected message still within the timeout when its
	// connection stops records nothing.
	KindDelivery = "ws_delivery"
)

// Defaults of Config fields left zero.
const (
	// DefaultConnectTimeout bounds dial, TLS and the WebSocket handshake.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultCallTimeout bounds a Call whose context has no earlier
	// deadline, so that a user never waits for ever on a lost reply.
	DefaultCallTimeout = 10 * time.Second
	// DefaultMaxMessageSize limits one received message in bytes; a
	// larger one ends the connection (close code 1009, a ProtocolError
	// KindConn sample).
	DefaultMaxMessageSize = 64 << 10
	// DefaultMinBackoff is the first wait before reconnecting.
	DefaultMinBackoff = 100 * time.Millisecond
	// DefaultMaxBackoff caps the wait before reconnecting.
	DefaultMaxBackoff = 5 * time.Second
	// DefaultDeliveryTimeout is how long an expected message may take to
	// arrive before it is judged missing: well above a healthy target's
	// fan-out delay, well inside a scenario's default Drain (30 s).
	DefaultDeliveryTimeout = 10 * time.Second
	// DefaultClockName describes the default clocks of fan-out samples.
	DefaultClockName = "receipt: generator wall clock (time.Now); written: the target's written_at (same host clock on one machine)"
)

// Config describes the connections of a Group. The zero value of each
// field takes the documented default; URL is required.
type Config struct {
	// URL is the endpoint's ws:// or wss:// URL.
	URL string
	// Header holds handshake request headers sent on every connection of
	// the group, such as Authorization or Origin; Group.Open adds a
	// connection's own.
	Header []httpc.Header
	// Subprotocols lists the WebSocket subprotocols to offer, such as
	// "graphql-transport-ws"; nil offers none.
	Subprotocols []string
	// TLS configures wss:// connections, such as a test stack's CA in
	// RootCAs; nil means the system roots. Give TLS or HTTPClient, not
	// both.
	TLS *tls.Config
	// HTTPClient, when set, performs the handshakes instead of the
	// group's own client (an HTTP/1.1 transport with no proxy and no kept
	// connections), such as an httptest TLS server's Client(). Its
	// Transport must support protocol upgrades, as *http.Transport does.
	HTTPClient *http.Client
	// ConnectTimeout bounds dial, TLS and handshake. Zero means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// CallTimeout bounds each Call unless its context ends earlier. Zero
	// means DefaultCallTimeout.
	CallTimeout time.Duration
	// MaxMessageSize limits one received message in bytes. Zero means
	// DefaultMaxMessageSize.
	MaxMessageSize int64
	// Reconnect dials a connection the target dropped (or a failed dial)
	// again after a backoff, for as long as its user holds it. Without it
	// a connection that ended stays down: its calls fail with
	// TransportError.
	Reconnect bool
	// MinBackoff is the first wait before reconnecting; it doubles per
	// failed attempt, with jitter. Zero means DefaultMinBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the wait before reconnecting. Zero means
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
	// Sink receives the samples (see the Kind constants); nil records
	// nothing, counters still count. When it also has the method
	// Begin(kind string) *loadtest.Pending, as *loadtest.Recorder and
	// *loadtest.User do, each expected message is observed from the
	// expectation on, so that its KindDelivery sample belongs to the step
	// in which it was expected (see Conn.Expect).
	Sink loadtest.Sink
	// FanoutKind names fan-out delay samples. Empty means
	// DefaultFanoutKind.
	FanoutKind string
	// WrittenAt extracts the time the target wrote a pushed message; it
	// returns ErrNoWrittenAt for a message that carries none, and any
	// other error for one that does not parse (a KindMalformed sample).
	// Nil means WrittenAtField("written_at"): a JSON string field with an
	// RFC 3339 time.
	WrittenAt func(msg []byte) (time.Time, error)
	// ID returns the id of a received message, or nil for one without.
	// A message whose id a pending Call waits for is that call's reply;
	// any other id can satisfy ExpectID. Nil means JSONRPCID: the "id"
	// member of a JSON-RPC response.
	ID func(msg []byte) []byte
	// CheckReply judges a Call's reply; it runs on the connection's
	// reader goroutine, and msg is valid only during the call. Nil means
	// JSONRPCReply: ProtocolError for invalid JSON, AppError for an
	// "error" member, else OK.
	CheckReply func(msg []byte) loadtest.Response
	// Lines says a data frame may carry several messages, one per line,
	// as Centrifugo's JSON protocol batches its replies and pushes: each
	// non-empty line is handled as a message of its own (a reply, a
	// pushed message, a fan-out sample). Without it a frame is one
	// message.
	Lines bool
	// Match, when set, says which pushed messages count for Expect and
	// ExpectID, such as the notifications of a connection that also
	// carries pings of the application's own; nil means every pushed
	// message. Every message still counts in Stats.Messages and may carry
	// a fan-out time.
	Match func(msg []byte) bool
	// TrackIDs remembers the ids of pushed messages received so that
	// ExpectID also matches a message that arrived before it was expected,
	// such as an announcement the target pushed ahead of the reply to the
	// call that caused it. It costs memory per message with an id.
	TrackIDs bool
	// DeliveryTimeout is how long an expected message (Conn.Expect,
	// ExpectID) may take to arrive; once it has passed, the message is
	// judged missing at once, an AppError KindDelivery sample, while the
	// connection goes on. Keep it within the scenario's Drain. Zero means
	// DefaultDeliveryTimeout; a negative value disables the deadline, and
	// Close judges whatever is still missing.
	DeliveryTimeout time.Duration
	// OnMessage, when set, is called for every pushed message (not a
	// reply) with its receipt time, from the connection's reader
	// goroutine. msg is valid only during the call.
	OnMessage func(c *Conn, msg []byte, received time.Time)
	// Now is the clock that stamps receipt times and times expectations
	// and their deadlines. Nil means time.Now. A KindDelivery sample
	// recorded through a Sink's Begin takes its latency from the core's
	// clock instead (time.Now from Begin to End).
	Now func() time.Time
	// ClockName describes the clocks fan-out uses, for the result. Empty
	// means DefaultClockName.
	ClockName string
}

// withDefaults checks c and returns it with its defaults filled in.
func (c Config) withDefaults() (Config, error) {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil:
		return c, fmt.Errorf("wsc: URL %q does not parse (%v); give an absolute URL such as ws://127.0.0.1:8080/ws", c.URL, err)
	case u.Scheme != "ws" && u.Scheme != "wss":
		return c, fmt.Errorf("wsc: URL %q: give a ws:// or wss:// URL", c.URL)
	case u.Host == "":
		return c, fmt.Errorf("wsc: URL %q has no host; give an absolute URL such as ws://127.0.0.1:8080/ws", c.URL)
	case c.TLS != nil && c.HTTPClient != nil:
		return c, fmt.Errorf("wsc: both TLS and HTTPClient are set; give TLS (the group builds its client) or put it in HTTPClient's Transport")
	case c.TLS != nil && u.Scheme == "ws":
		return c, fmt.Errorf("wsc: TLS is set but URL %q is plaintext; use a wss:// URL or leave TLS nil", c.URL)
	case c.ConnectTimeout < 0, c.CallTimeout < 0, c.MinBackoff < 0, c.MaxBackoff < 0:
		return c, fmt.Errorf("wsc: negative duration in Config (ConnectTimeout %v, CallTimeout %v, MinBackoff %v, MaxBackoff %v); use 0 for the default", c.ConnectTimeout, c.CallTimeout, c.MinBackoff, c.MaxBackoff)
	case c.MaxMessageSize < 0:
		return c, fmt.Errorf("wsc: MaxMessageSize %d is negative; use 0 for the default %d", c.MaxMessageSize, DefaultMaxMessageSize)
	}
	for _, h := range c.Header {
		if err := checkHeader(h); err != nil {
			return c, err
		}
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
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
	if c.ID == nil {
		c.ID = JSONRPCID
	}
	if c.CheckReply == nil {
		c.CheckReply = JSONRPCReply
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ClockName == "" {
		c.ClockName = DefaultClockName
	}
	if c.HTTPClient == nil {
		c.HTTPClient = newClient(c.TLS, c.ConnectTimeout)
	}
	return c, nil
}

// newClient returns the group's handshake client: HTTP/1.1 only (an
// upgrade needs it), no proxy (load goes where the URL says), and no kept
// connections, so that a refused handshake leaves nothing open behind.
func newClient(tc *tls.Config, handshake time.Duration) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: handshake,
		DisableKeepAlives:   true,
		DisableCompression:  true,
	}
	if tc != nil {
		tr.TLSClientConfig = tc.Clone()
	}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(true)
	return &http.Client{Transport: tr}
}

// checkHeader reports a header field that would break the handshake.
func checkHeader(h httpc.Header) error {
	if h.Name == "" || strings.ContainsAny(h.Name, " :\r\n") || strings.ContainsAny(h.Value, "\r\n") {
		return fmt.Errorf("wsc: header %q is not a valid field; give a name without spaces or colons and a value without line breaks", h.Name)
	}
	return nil
}

// headers returns the handshake headers of a connection: the group's, then
// its own.
func headers(group, own []httpc.Header) (http.Header, error) {
	h := make(http.Header, len(group)+len(own))
	for _, hs := range [][]httpc.Header{group, own} {
		for _, f := range hs {
			if err := checkHeader(f); err != nil {
				return nil, err
			}
			h.Add(f.Name, f.Value)
		}
	}
	return h, nil
}
