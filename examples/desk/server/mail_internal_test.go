package server

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

// TestMailClientDialsOnlyLoopback checks the dial-time guard: a name that
// resolves to a non-loopback address is refused before any packet leaves.
func TestMailClientDialsOnlyLoopback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, url := range []string{"http://10.255.255.1:9/x", "http://192.0.2.1:9/x"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
		_, err := newMailClient(false).Do(req)
		if !errors.Is(err, errMailAddr) {
			t.Errorf("%s: got %v, want the loopback refusal", url, err)
		}
	}
	// With private networks allowed, a public address is still refused;
	// a private one passes the guard (the dial itself then times out).
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://192.0.2.1:9/x", nil)
	if _, err := newMailClient(true).Do(req); !errors.Is(err, errMailAddr) {
		t.Errorf("192.0.2.1 is public: want the refusal, got %v", err)
	}
	short, cancel2 := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel2()
	req, _ = http.NewRequestWithContext(short, http.MethodPost, "http://10.255.255.1:9/x", nil)
	if _, err := newMailClient(true).Do(req); errors.Is(err, errMailAddr) {
		t.Errorf("10.255.255.1 is private and allowed: got the refusal %v", err)
	}
}
