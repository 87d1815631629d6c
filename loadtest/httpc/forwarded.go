package httpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// MaxClientAddrs is the number of distinct addresses ClientAddr hands out.
const MaxClientAddrs = 1 << 17

// ClientAddr returns the client address of modeled user i for the
// X-Forwarded-For header: the i-th address of 198.18.0.0/15, the range
// RFC 2544 reserves for benchmarks, so it never names a real host. It wraps
// around after MaxClientAddrs users. Only the header carries it; traffic
// still goes to the target's loopback address.
func ClientAddr(i int) string {
	i %= MaxClientAddrs
	if i < 0 {
		i += MaxClientAddrs
	}
	a := netip.AddrFrom4([4]byte{198, 18 + byte(i>>16), byte(i >> 8), byte(i)})
	return a.String()
}

// ForwardedFor returns the X-Forwarded-For header naming ClientAddr(i), to
// put in Call.Header (or the prepared headers) of user i's requests.
func ForwardedFor(i int) Header {
	return Header{Name: "X-Forwarded-For", Value: ClientAddr(i)}
}

// DefaultReflectHeader is the response header in which a target reports the
// client address it derived for a request, for CheckForwardedFor.
const DefaultReflectHeader = "X-Client-Addr"

// CheckForwardedFor verifies at the start of a run that the target honours
// X-Forwarded-For, so that per-user client addresses reach its rate limiter.
// It sends two GETs to checkURL with two different ClientAddr values and
// requires the target to reflect each one: in the response header
// reflectHeader (DefaultReflectHeader when empty), or, when that header is
// absent, in the response body (an echo endpoint that writes the client
// address it sees, plain or inside JSON). It returns nil when both are
// reflected and an error saying what the target saw otherwise.
func CheckForwardedFor(ctx context.Context, c *Client, checkURL, reflectHeader string) error {
	if reflectHeader == "" {
		reflectHeader = DefaultReflectHeader
	}
	req, err := c.Prepare("GET", checkURL, nil, nil)
	if err != nil {
		return err
	}
	var errs []error
	for _, i := range []int{1, MaxClientAddrs - 2} {
		want := ClientAddr(i)
		call := &Call{Header: []Header{ForwardedFor(i)}, KeepBody: true, Capture: []string{reflectHeader}}
		resp := c.Exchange(ctx, req, call)
		if resp.Err != nil || call.Status != 200 {
			return fmt.Errorf("httpc: X-Forwarded-For check: GET %s answered %v (status %d, %v); give a URL that answers 200 with the client address", checkURL, resp.Outcome, call.Status, resp.Err)
		}
		got := call.Captured[0]
		if got == "" {
			if containsAddr(call.RespBody, want) {
				continue
			}
			body := call.RespBody
			if len(body) > 80 {
				body = body[:80]
			}
			errs = append(errs, fmt.Errorf("sent X-Forwarded-For %s, target reflected no %s header and its body %q does not contain it", want, reflectHeader, body))
			continue
		}
		if strings.TrimSpace(got) != want {
			errs = append(errs, fmt.Errorf("sent X-Forwarded-For %s, target saw client %s", want, got))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("httpc: target at %s does not honour X-Forwarded-For (configure it to trust the generator's address as a proxy, or do not use per-user client addresses): %w", checkURL, errors.Join(errs...))
	}
	return nil
}

// containsAddr reports whether body contains addr as a whole token, not as
// part of a longer address.
func containsAddr(body []byte, addr string) bool {
	for off := 0; ; {
		i := bytes.Index(body[off:], []byte(addr))
		if i < 0 {
			return false
		}
		i += off
		end := i + len(addr)
		if (i == 0 || !isAddrByte(body[i-1])) && (end == len(body) || !isAddrByte(body[end])) {
			return true
		}
		off = i + 1
	}
}

func isAddrByte(c byte) bool { return c == '.' || c == ':' || ('0' <= c && c <= '9') }
