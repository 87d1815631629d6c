package server

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// PrivateRanges are the networks RELAY_TRUSTED_PROXIES trusts by default:
// loopback, the private IPv4 ranges and IPv6 unique local and loopback
// addresses — where a reverse proxy in front of the relay (Caddy, an
// ingress) connects from.
var PrivateRanges = []netip.Prefix{
	netip.MustParsePrefix("127.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("::1/128"),
	netip.MustParsePrefix("fc00::/7"),
}

// ParseTrustedProxies reads RELAY_TRUSTED_PROXIES: comma-separated
// networks or addresses, "private_ranges" for PrivateRanges, or "none".
func ParseTrustedProxies(v string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(v, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case f == "none":
			return nil, nil
		case f == "private_ranges":
			out = append(out, PrivateRanges...)
		case strings.Contains(f, "/"):
			p, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("%q: want a network such as 10.0.0.0/8, an address, private_ranges or none", f)
			}
			out = append(out, p.Masked())
		default:
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q: want a network such as 10.0.0.0/8, an address, private_ranges or none", f)
			}
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out, nil
}

// clientAddr is the address of the client a request comes from: the peer,
// unless the peer is a trusted proxy — then the right-most address of
// X-Forwarded-For that is not a trusted proxy (each proxy appends the
// address it was reached from, so addresses left of an untrusted one may
// be forged), or the left-most when every one is trusted.
func (s *Server) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil || !s.trusted(peer) {
		return host
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, a := range strings.Split(h, ",") {
			if a = strings.TrimSpace(a); a != "" {
				hops = append(hops, a)
			}
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(hops[i])
		if err != nil {
			return host // a malformed hop: trust nothing left of it
		}
		if !s.trusted(a) || i == 0 {
			return a.Unmap().String()
		}
	}
	return host
}

func (s *Server) trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s.cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ClientAddrHeader is the response header of GET /api/whoami naming the
// client address the relay derived.
const ClientAddrHeader = "X-Client-Addr"

// handleWhoami answers the client address the relay sees for the request,
// in the X-Client-Addr header and as {"client_addr": …}: what a load test
// checks before it models many clients behind one generator.
func (s *Server) handleWhoami(w http.ResponseWriter, r *http.Request) {
	a := s.clientAddr(r)
	w.Header().Set(ClientAddrHeader, a)
	writeJSON(w, http.StatusOK, map[string]string{"client_addr": a})
}
