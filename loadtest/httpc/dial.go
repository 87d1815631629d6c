package httpc

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Dialer opens TCP connections, optionally from several source addresses in
// turn, and wraps them in TLS for https. The sse package dials through it so
// streams and requests share one TLS and source-address configuration.
type Dialer struct {
	// TLS is the configuration for https connections; nil means a default
	// configuration with the system roots. Connections share a copy made
	// at the first dial to each server name: do not change it after.
	TLS *tls.Config
	// LocalAddrs are source addresses used in turn; empty means the
	// system's choice.
	LocalAddrs []netip.Addr
	// Timeout bounds dial plus TLS handshake; zero means
	// DefaultDialTimeout.
	Timeout time.Duration
	// HTTP2 offers "h2" before "http/1.1" in the TLS handshake (ALPN).
	HTTP2 bool
	// Routes sends a connection aimed at a key (host:port) to the key's
	// addresses in turn; see Options.Routes.
	Routes map[string][]string

	next, route atomic.Uint32
	configs     sync.Map // tlsKey → *tls.Config: one per server name, shared by its connections
}

// tlsKey names the configuration of connections to one server name made
// from one TLS configuration.
type tlsKey struct {
	base       *tls.Config
	serverName string
	http2      bool
}

// NewDialer returns a Dialer for the TLS roots, source addresses and dial
// timeout of opts.
func NewDialer(opts Options) (*Dialer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg, err := o.TLS()
	if err != nil {
		return nil, err
	}
	return &Dialer{TLS: cfg, LocalAddrs: o.LocalAddrs, Timeout: o.DialTimeout, HTTP2: o.HTTP2, Routes: o.Routes}, nil
}

// DialTCP opens a plain TCP connection to addr (host:port) — or to the
// next of its Routes — from the next source address, within the dial
// timeout and ctx.
func (d *Dialer) DialTCP(ctx context.Context, addr string) (net.Conn, error) {
	if to := d.Routes[addr]; len(to) > 0 {
		addr = to[int(d.route.Add(1)-1)%len(to)]
	}
	nd := net.Dialer{Timeout: d.timeout(), KeepAlive: -1}
	if n := len(d.LocalAddrs); n > 0 {
		i := int(d.next.Add(1)-1) % n
		nd.LocalAddr = &net.TCPAddr{IP: d.LocalAddrs[i].AsSlice()}
	}
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return c, nil
}

// Dial opens a connection to addr (host:port): TCP for secure false, TCP
// plus a completed TLS handshake with server name serverName for secure
// true. On Linux the TCP connection reads and writes with raw system calls
// (see rawConn).
func (d *Dialer) Dial(ctx context.Context, addr string, secure bool, serverName string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	c, err := d.DialTCP(ctx, addr)
	if err != nil {
		return nil, err
	}
	if !raceEnabled {
		c = rawIO(c)
	}
	if !secure {
		return c, nil
	}
	tc := tls.Client(c, d.tlsConfig(serverName))
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return tc, nil
}

// tlsConfig returns the configuration of a connection to serverName: TLS
// (or a default) with the server name and ALPN protocols filled in. It is
// made once per server name and shared by the connections, which never
// change it: a clone per connection would be half a KiB each, held as long
// as the connection.
func (d *Dialer) tlsConfig(serverName string) *tls.Config {
	k := tlsKey{d.TLS, serverName, d.HTTP2}
	if cfg, ok := d.configs.Load(k); ok {
		return cfg.(*tls.Config)
	}
	var cfg *tls.Config
	if d.TLS != nil {
		cfg = d.TLS.Clone()
	} else {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if cfg.ServerName == "" {
		cfg.ServerName = serverName
	}
	if len(cfg.NextProtos) == 0 {
		if d.HTTP2 {
			cfg.NextProtos = []string{"h2", "http/1.1"}
		} else {
			cfg.NextProtos = []string{"http/1.1"}
		}
	}
	got, _ := d.configs.LoadOrStore(k, cfg)
	return got.(*tls.Config)
}

func (d *Dialer) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultDialTimeout
}
