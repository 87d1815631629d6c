package httpc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Default values that Options fields take when left zero.
const (
	// DefaultMaxConnsPerHost is the default bound on open connections to
	// one host (scheme and host:port).
	DefaultMaxConnsPerHost = 256
	// DefaultMaxDialing is the default bound on connections being opened
	// to one host at once: a loopback dial takes tens of microseconds, a
	// TLS handshake a few milliseconds of a core, so 16 at once open
	// thousands a second and keep the cores for the load.
	DefaultMaxDialing = 16
	// DefaultTimeout is the default per-request timeout: from the call
	// until the whole answer has been read.
	DefaultTimeout = 30 * time.Second
	// DefaultDialTimeout is the default bound on dialling one connection,
	// TLS handshake included.
	DefaultDialTimeout = 10 * time.Second
	// DefaultIdleTimeout is how long a connection may stay idle in the
	// pool by default before it is closed.
	DefaultIdleTimeout = 30 * time.Second
	// DefaultReadBufferSize is the default per-connection read buffer in
	// bytes; a response header line must fit in it.
	DefaultReadBufferSize = 8 << 10
	// DefaultWriteBufferSize is the default per-connection write buffer in
	// bytes; larger requests are written through it in pieces.
	DefaultWriteBufferSize = 4 << 10
	// DefaultMaxBodySize is the default limit in bytes on a response body
	// a caller keeps (Call.KeepBody); bodies that are only counted and
	// discarded have no limit.
	DefaultMaxBodySize = 4 << 20
	// DefaultQuantum is the event loop's default shortest interval
	// between two wake-ups (Options.Quantum). At 20,000 requests/s it sends
	// two arrivals a wake-up, each at most a tenth of a millisecond late.
	// Measured with headroom run against nginx on a 2-core AMD EPYC VM,
	// twice each: no quantum 18.9–23.5 CPU µs a request (median latency
	// 94–100 µs), 100 µs 14.8–14.9 (112 µs), 250 µs 13.8–14.2 (222–225 µs).
	DefaultQuantum = 100 * time.Microsecond
	// DefaultUserAgent is the User-Agent header sent unless the prepared
	// headers set one.
	DefaultUserAgent = "headroom"
)

// Options configure a Client. The zero value is a usable HTTP/1.1 client with
// the documented defaults.
type Options struct {
	// MaxConnsPerHost bounds the connections open to one host at once.
	// Connections are opened only as concurrency demands, so the pool is
	// sized to the load up to this bound; past it a request waits for a
	// free connection until its deadline. Zero means
	// DefaultMaxConnsPerHost.
	MaxConnsPerHost int
	// MaxDialing bounds the connections being opened to one host at once.
	// A request that finds no idle connection while that many dials are
	// in progress waits, as for a full pool, for whichever comes first: a
	// connection released by another request or its turn to dial. A burst
	// — the generator's own pause, a level's first instant — is then
	// served by the connections its requests free, instead of by a dial
	// each: at 20,000/s against nginx, a pause of 20–40 ms of the
	// generator's had every request due in it dial at once, which starved
	// it the more, until its pool passed 10,000 connections, beyond what
	// the target accepts. Zero means DefaultMaxDialing.
	MaxDialing int
	// Timeout is the per-request timeout, from the call until the whole
	// answer has been read; a context deadline that comes earlier wins.
	// The lean engine may let a request run a little past it (a 64th of
	// the time, 50 ms at most), to keep a connection's deadline across the
	// requests it serves. Zero means DefaultTimeout; a negative value is
	// invalid.
	Timeout time.Duration
	// DialTimeout bounds one dial including the TLS handshake. Zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// RootCAs are the certificate authorities trusted for https targets,
	// such as the stack's Caddy CA. Nil means the system roots (plus
	// RootCAPEM if set).
	RootCAs *x509.CertPool
	// RootCAPEM is one or more PEM-encoded CA certificates to trust in
	// addition to RootCAs (or to the system roots when RootCAs is nil).
	RootCAPEM []byte
	// TLSConfig, when set, is cloned and used for https targets as is;
	// RootCAs and RootCAPEM are then added to it if set.
	TLSConfig *tls.Config
	// InsecureSkipVerify disables certificate verification. Only for
	// targets on loopback whose CA is unknown; prefer RootCAPEM.
	InsecureSkipVerify bool
	// HTTP2 sends requests over HTTP/2 through a tuned net/http Transport:
	// negotiated by ALPN for https, prior knowledge (h2c) for http.
	HTTP2 bool
	// NetHTTP sends HTTP/1.1 requests through a tuned net/http Transport
	// instead of the lean engine (for comparison, or for features the lean
	// engine lacks such as proxies and compression).
	NetHTTP bool
	// LocalAddrs are source addresses for new connections, used in turn,
	// to spread many connections over several 127.0.0.x addresses when the
	// ephemeral port range of one address is not enough. Empty means the
	// system's choice.
	LocalAddrs []netip.Addr
	// Routes spreads connections: a connection aimed at a key (host:port,
	// as in the URL) is opened to the key's addresses in turn instead. It
	// lets one target be reached through several published ports of the
	// same server when one port's forwarder cannot hold every connection
	// (Docker's userland proxy holds a few thousand); the Host header and
	// the TLS server name stay the URL's. fixtures.Stack.ClientOptions
	// fills it.
	Routes map[string][]string
	// IdleTimeout is how long a connection may stay idle in the pool
	// before it is closed. Idle connections are reused most recently used
	// first, so those the load no longer needs stay idle and close: the
	// pool keeps what the concurrency of the last IdleTimeout needed. Zero
	// means DefaultIdleTimeout; a negative value keeps idle connections
	// until CloseIdleConnections or Close.
	IdleTimeout time.Duration
	// ReadBufferSize is the per-connection read buffer of the lean engine
	// in bytes; an idle connection gives it back, so that only connections
	// in use hold one. Zero means DefaultReadBufferSize.
	ReadBufferSize int
	// WriteBufferSize is the per-connection write buffer of the lean engine
	// in bytes, given back while idle as the read buffer. Zero means
	// DefaultWriteBufferSize.
	WriteBufferSize int
	// MaxBodySize limits in bytes a response body kept by Call.KeepBody;
	// a longer body is a ProtocolError. Zero means DefaultMaxBodySize.
	MaxBodySize int
	// UserAgent is sent as User-Agent unless a prepared header sets it.
	// Empty means DefaultUserAgent.
	UserAgent string
	// Quantum is the event loop's (Client.Loop) shortest interval between
	// two wake-ups: the arrivals due within it go out together, the first
	// of them up to Quantum late (its latency still runs from its intended
	// time). A wake-up costs a virtual machine's thread more than a
	// request: fewer of them, fewer CPU µs per request. Arrivals further
	// apart than Quantum are each sent on time. Zero means DefaultQuantum;
	// negative means none: a wake-up for every arrival.
	Quantum time.Duration
	// LoopAlone tells the event loop that nothing else in the process
	// needs the network promptly — no target, mock upstream or server of
	// its own — as in the headroom command. With GOMAXPROCS=1 the loop
	// then sleeps in a system call that keeps the one processor, waking on
	// time to within microseconds; without it, it sleeps in the runtime's
	// network poller, which wakes in whole milliseconds but serves the
	// process's own servers meanwhile (keeping the processor from them
	// would delay each of their answers up to 10 ms, when the runtime's
	// monitor polls the network). With two processors or more, the loop
	// keeps one and the others serve the rest, whatever LoopAlone says.
	LoopAlone bool
	// RetryPOST lets the lean engine resend a non-idempotent request once
	// when a reused keep-alive connection turns out to be closed before
	// any byte of the answer arrived (the server dropped an idle
	// connection). GET, HEAD, OPTIONS, PUT and DELETE are always resent
	// in that case. Off by default, as in net/http.
	RetryPOST bool
}

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.MaxConnsPerHost < 0:
		return o, fmt.Errorf("httpc: MaxConnsPerHost is %d; set a positive bound or 0 for the default %d", o.MaxConnsPerHost, DefaultMaxConnsPerHost)
	case o.MaxDialing < 0:
		return o, fmt.Errorf("httpc: MaxDialing is %d; set a positive bound or 0 for the default %d", o.MaxDialing, DefaultMaxDialing)
	case o.Timeout < 0:
		return o, fmt.Errorf("httpc: Timeout is %v; set a positive duration or 0 for the default %v", o.Timeout, DefaultTimeout)
	case o.DialTimeout < 0:
		return o, fmt.Errorf("httpc: DialTimeout is %v; set a positive duration or 0 for the default %v", o.DialTimeout, DefaultDialTimeout)
	case o.ReadBufferSize < 0 || (o.ReadBufferSize > 0 && o.ReadBufferSize < 256):
		return o, fmt.Errorf("httpc: ReadBufferSize is %d; set at least 256 bytes or 0 for the default %d", o.ReadBufferSize, DefaultReadBufferSize)
	case o.WriteBufferSize < 0:
		return o, fmt.Errorf("httpc: WriteBufferSize is %d; set a positive size or 0 for the default %d", o.WriteBufferSize, DefaultWriteBufferSize)
	case o.MaxBodySize < 0:
		return o, fmt.Errorf("httpc: MaxBodySize is %d; set a positive size or 0 for the default %d", o.MaxBodySize, DefaultMaxBodySize)
	}
	for from, to := range o.Routes {
		if _, _, err := net.SplitHostPort(from); err != nil {
			return o, fmt.Errorf("httpc: Routes key %q is not host:port (%v); give the address as in the URL, e.g. 127.0.0.1:8443", from, err)
		}
		if len(to) == 0 {
			return o, fmt.Errorf("httpc: Routes[%q] is empty; give the addresses that serve it, or leave the key out", from)
		}
		for _, a := range to {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return o, fmt.Errorf("httpc: Routes[%q] has %q, not host:port (%v)", from, a, err)
			}
		}
	}
	if o.MaxConnsPerHost == 0 {
		o.MaxConnsPerHost = DefaultMaxConnsPerHost
	}
	if o.MaxDialing == 0 {
		o.MaxDialing = DefaultMaxDialing
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ReadBufferSize == 0 {
		o.ReadBufferSize = DefaultReadBufferSize
	}
	if o.WriteBufferSize == 0 {
		o.WriteBufferSize = DefaultWriteBufferSize
	}
	if o.MaxBodySize == 0 {
		o.MaxBodySize = DefaultMaxBodySize
	}
	if o.UserAgent == "" {
		o.UserAgent = DefaultUserAgent
	}
	if o.Quantum == 0 {
		o.Quantum = DefaultQuantum
	} else if o.Quantum < 0 {
		o.Quantum = 0
	}
	return o, nil
}

// TLS returns the TLS configuration that Options describe: TLSConfig
// (cloned) or a new one, with RootCAs and RootCAPEM trusted. It fails when
// RootCAPEM holds no certificate.
func (o Options) TLS() (*tls.Config, error) {
	var cfg *tls.Config
	if o.TLSConfig != nil {
		cfg = o.TLSConfig.Clone()
	} else {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if o.RootCAs != nil {
		cfg.RootCAs = o.RootCAs
	}
	if len(o.RootCAPEM) > 0 {
		pool := cfg.RootCAs
		if pool == nil {
			sys, err := x509.SystemCertPool()
			if err != nil || sys == nil {
				sys = x509.NewCertPool()
			}
			pool = sys
		} else {
			pool = pool.Clone()
		}
		if !pool.AppendCertsFromPEM(o.RootCAPEM) {
			return nil, errors.New("httpc: RootCAPEM holds no PEM certificate; pass the CA's certificate file content (-----BEGIN CERTIFICATE-----)")
		}
		cfg.RootCAs = pool
	}
	if o.InsecureSkipVerify {
		cfg.InsecureSkipVerify = true
	}
	return cfg, nil
}
