package kit

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// CheckLocalURL accepts an http(s) URL whose host is loopback (an address
// or "localhost"), or any host name when private networks are allowed
// (the address it resolves to is checked when dialling, see LocalClient).
// A refusal names an example URL, the variable allowVar that allows
// private networks, and why the service dials only local hosts.
func CheckLocalURL(raw string, allowPrivate bool, example, allowVar, why string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http:// URL such as %s", raw, example)
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if !LocalAddr(ip, allowPrivate) {
			more := " (" + allowVar + "=1 also allows private networks)"
			if allowPrivate {
				more = " nor a private one"
			}
			return fmt.Errorf("%q: %s is not a loopback address%s; %s", raw, ip, more, why)
		}
		return nil
	}
	if host != "localhost" && !allowPrivate {
		return fmt.Errorf("%q: host %q is not loopback; use 127.0.0.1 or localhost (or %s=1 for a host name on a private network, such as a container's)", raw, host, allowVar)
	}
	return nil
}

// LocalAddr reports whether ip may be dialled: loopback, or private when
// allowPrivate.
func LocalAddr(ip netip.Addr, allowPrivate bool) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || (allowPrivate && ip.IsPrivate())
}

// LocalClient returns an HTTP client that dials only LocalAddr addresses,
// checked after name resolution (a refusal wraps refused with the
// address), keeps up to idlePerHost idle connections for idle, and
// follows no redirects.
func LocalClient(allowPrivate bool, refused error, idlePerHost int, idle time.Duration) *http.Client {
	d := &net.Dialer{
		Timeout: 5 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !LocalAddr(ap.Addr(), allowPrivate) {
				return fmt.Errorf("%w: %s", refused, address)
			}
			return nil
		},
	}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, MaxIdleConnsPerHost: idlePerHost, IdleConnTimeout: idle},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
