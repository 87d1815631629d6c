package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestVendorClientDialsOnlyLoopback checks the dial-time guard: an
// address that is not loopback is refused before any packet leaves; with
// private networks allowed, a public one still is. Redirects are not
// followed.
func TestVendorClientDialsOnlyLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, url := range []string{"http://10.255.255.1:9/x", "http://192.0.2.1:9/x"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		if _, err := newVendorClient(false, 1).Do(req); !errors.Is(err, errVendorAddr) {
			t.Errorf("%s: got %v, want the loopback refusal", url, err)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://192.0.2.1:9/x", nil)
	if _, err := newVendorClient(true, 1).Do(req); !errors.Is(err, errVendorAddr) {
		t.Errorf("192.0.2.1 is public: want the refusal, got %v", err)
	}
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	req, _ = http.NewRequestWithContext(short, http.MethodPost, "http://10.255.255.1:9/x", nil)
	if _, err := newVendorClient(true, 1).Do(req); errors.Is(err, errVendorAddr) {
		t.Errorf("10.255.255.1 is private and allowed: got the refusal %v", err)
	}

	redir := httptest.NewServer(http.RedirectHandler("http://93.184.215.14/", http.StatusFound))
	defer redir.Close()
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, redir.URL, nil)
	resp, err := newVendorClient(false, 1).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Errorf("a redirect was followed: status %d", resp.StatusCode)
	}
}
