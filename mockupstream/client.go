package mockupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client drives a running mock upstream's admin endpoints from a test: it
// changes the behaviour mid-run and reads the counters.
type Client struct {
	// BaseURL is the upstream's root, such as "http://127.0.0.1:8765".
	BaseURL string
	// HTTPClient sends the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// Token is the server's admin token (its ADMIN_TOKEN), sent as a
	// bearer token.
	Token string
}

// Behavior returns the behaviour in force (GET /admin/behavior).
func (c *Client) Behavior(ctx context.Context) (Behavior, error) {
	var b Behavior
	return b, c.do(ctx, http.MethodGet, "/admin/behavior", nil, &b)
}

// SetBehavior replaces the behaviour for the next request (POST
// /admin/behavior). An invalid b is refused with the server's message,
// which names the field, and the behaviour in force stays.
func (c *Client) SetBehavior(ctx context.Context, b Behavior) error {
	body, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, "/admin/behavior", body, nil)
}

// UpdateBehavior reads the behaviour, lets change edit it and sets the
// result. It is not atomic against another client changing it meanwhile.
func (c *Client) UpdateBehavior(ctx context.Context, change func(*Behavior)) error {
	b, err := c.Behavior(ctx)
	if err != nil {
		return err
	}
	change(&b)
	return c.SetBehavior(ctx, b)
}

// Stats returns the counters (GET /admin/stats).
func (c *Client) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	return s, c.do(ctx, http.MethodGet, "/admin/stats", nil, &s)
}

// Reset restores the starting behaviour and zeroes the counters (POST
// /admin/reset).
func (c *Client) Reset(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/admin/reset", nil, nil)
}

// Health returns nil when GET /healthz answers 200.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil)
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, rd)
	if err != nil {
		return fmt.Errorf("mockupstream: %s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("mockupstream: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("mockupstream: %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e errorBody
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("mockupstream: %s %s: %s: %s", method, path, resp.Status, e.Error)
		}
		return fmt.Errorf("mockupstream: %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("mockupstream: %s %s: decoding the answer: %w", method, path, err)
		}
	}
	return nil
}
