package server

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientAddr: the client's address is the peer's unless the peer is a
// trusted proxy, then the right-most untrusted X-Forwarded-For hop, so a
// client cannot forge its address through an untrusted peer.
func TestClientAddr(t *testing.T) {
	private, err := ParseTrustedProxies("private_ranges")
	require.NoError(t, err)
	one, err := ParseTrustedProxies("10.1.2.3")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, peer, xff string
		trusted         string // "private", "one" or "none"
		want            string
	}{
		{"a generator through Caddy", "172.18.0.4:50000", "198.18.0.7, 172.18.0.1", "private", "198.18.0.7"},
		{"a generator on loopback", "127.0.0.1:50000", "198.18.1.2", "private", "198.18.1.2"},
		{"no header", "127.0.0.1:50000", "", "private", "127.0.0.1"},
		{"untrusted peer forging", "203.0.113.9:4000", "198.18.0.7", "private", "203.0.113.9"},
		{"forged hop left of a real one", "127.0.0.1:1", "6.6.6.6, 198.18.0.7", "private", "198.18.0.7"},
		{"every hop trusted", "127.0.0.1:1", "10.0.0.1, 10.0.0.2", "private", "10.0.0.1"},
		{"malformed hop", "127.0.0.1:1", "198.18.0.7, nonsense", "private", "127.0.0.1"},
		{"trust none", "127.0.0.1:50000", "198.18.0.7", "none", "127.0.0.1"},
		{"trust one address", "10.1.2.3:1", "198.18.0.7", "one", "198.18.0.7"},
		{"not that address", "10.1.2.4:1", "198.18.0.7", "one", "10.1.2.4"},
		{"IPv6 loopback peer", "[::1]:1", "198.18.0.7", "private", "198.18.0.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Server{}
			switch tc.trusted {
			case "private":
				s.cfg.TrustedProxies = private
			case "one":
				s.cfg.TrustedProxies = one
			}
			r := httptest.NewRequest("GET", "/api/whoami", nil)
			r.RemoteAddr = tc.peer
			if tc.xff != "" {
				r.Header.Set("X-Forwarded-For", tc.xff)
			}
			assert.Equal(t, tc.want, s.clientAddr(r))
			w := httptest.NewRecorder()
			s.handleWhoami(w, r)
			assert.Equal(t, tc.want, w.Header().Get(ClientAddrHeader))
			assert.JSONEq(t, `{"client_addr":"`+tc.want+`"}`, w.Body.String())
		})
	}
}

func TestParseTrustedProxies(t *testing.T) {
	p, err := ParseTrustedProxies("none")
	require.NoError(t, err)
	assert.Empty(t, p)
	p, err = ParseTrustedProxies("10.0.0.0/8, 192.0.2.1")
	require.NoError(t, err)
	assert.Len(t, p, 2)
	_, err = ParseTrustedProxies("10.0.0.0/33")
	assert.ErrorContains(t, err, "want a network")
	_, err = ParseTrustedProxies("proxy.local")
	assert.ErrorContains(t, err, "want a network")
	_, err = ConfigFromEnv(func(k string) string {
		if k == "RELAY_TRUSTED_PROXIES" {
			return "bogus"
		}
		return ""
	})
	assert.ErrorContains(t, err, "RELAY_TRUSTED_PROXIES")
}
