package httpc_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// clientAddr is the address a target derives for a request: the last
// X-Forwarded-For entry when the peer is a trusted proxy (loopback here)
// and trust is on, the peer otherwise.
func clientAddr(r *http.Request, trust bool) string {
	peer, _, _ := net.SplitHostPort(r.RemoteAddr)
	if xff := r.Header.Get("X-Forwarded-For"); trust && xff != "" {
		parts := strings.Split(xff, ",")
		return strings.TrimSpace(parts[len(parts)-1])
	}
	return peer
}

func TestCheckForwardedFor(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantErr string
	}{
		// The target reflects the derived address in X-Client-Addr.
		{"header", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Client-Addr", clientAddr(r, true))
		}, ""},
		// An echo endpoint writes it in a JSON body.
		{"body-json", func(w http.ResponseWriter, r *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]string{"client": clientAddr(r, true)})
		}, ""},
		// A target that ignores the header sees the generator's address.
		{"ignored", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Client-Addr", clientAddr(r, false))
		}, "saw client 127.0.0.1"},
		// A body that does not mention the address.
		{"no-reflection", func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte("ok"))
		}, "does not contain it"},
		// The check URL does not exist.
		{"404", http.NotFound, "answered http_4xx"},
	}
	for _, tt := range tests {
		t.Run("target="+tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			t.Cleanup(srv.Close)
			c := newClient(t, httpc.Options{})
			err := httpc.CheckForwardedFor(t.Context(), c, srv.URL+"/whoami", "")
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestClientAddr(t *testing.T) {
	bench := netip.MustParsePrefix("198.18.0.0/15")
	seen := map[string]bool{}
	for i := range httpc.MaxClientAddrs {
		a := httpc.ClientAddr(i)
		if seen[a] {
			t.Fatalf("ClientAddr(%d) = %s repeats", i, a)
		}
		seen[a] = true
		if !bench.Contains(netip.MustParseAddr(a)) {
			t.Fatalf("ClientAddr(%d) = %s is outside %s", i, a, bench)
		}
	}
	assert.Equal(t, "198.18.0.0", httpc.ClientAddr(0))
	assert.Equal(t, "198.19.255.255", httpc.ClientAddr(httpc.MaxClientAddrs-1))
	assert.Equal(t, httpc.ClientAddr(5), httpc.ClientAddr(httpc.MaxClientAddrs+5), "wraps around")
	assert.Equal(t, httpc.Header{Name: "X-Forwarded-For", Value: "198.18.1.2"}, httpc.ForwardedFor(258))
}
