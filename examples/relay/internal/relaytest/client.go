package relaytest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// WaitTimeout bounds every wait in these helpers: long, so that a slow
// shared machine does not fail a test, yet a hang ends.
const WaitTimeout = 20 * time.Second

// Reply is the answer to one JSON-RPC POST.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
	// Result and Error are decoded from Body when it is a JSON-RPC answer.
	Result json.RawMessage
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
}

// ToolResult decodes Result as a tools/call result.
func (r Reply) ToolResult(t testing.TB) (text string, isError bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		t.Fatalf("relaytest: tools/call result %s: %v", r.Body, err)
	}
	for _, c := range res.Content {
		text += c.Text
	}
	return text, res.IsError
}

// Post sends body to url with the bearer token (none when "") and returns
// the answer.
func Post(t testing.TB, ctx context.Context, client *http.Client, url, token string, body []byte) Reply {
	t.Helper()
	return PostWith(t, ctx, client, url, token, body)
}

// PostWith is Post with extra headers (name, value pairs); a value ""
// removes the header.
func PostWith(t testing.TB, ctx context.Context, client *http.Client, url, token string, body []byte, headers ...string) Reply {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	setHeaders(req.Header, headers)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("relaytest: POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("relaytest: POST %s: reading the answer: %v", url, err)
	}
	r := Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}
	_ = json.Unmarshal(b, &r)
	return r
}

// RPC sends one JSON-RPC request with id 1.
func RPC(t testing.TB, client *http.Client, url, token, method string, params any) Reply {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), WaitTimeout)
	defer cancel()
	return Post(t, ctx, client, url, token, body)
}

// SSE is one server-sent event or comment.
type SSE struct {
	ID, Event, Data string
	// Comment is the text of a ": comment" line; the other fields are then empty.
	Comment string
	// Received is when the event's blank line was read.
	Received time.Time
}

// CallEvent is the data of an "event: call".
type CallEvent struct {
	ID          int64  `json:"id"`
	WorkspaceID int64  `json:"workspace_id"`
	UserID      int64  `json:"user_id"`
	Kind        string `json:"kind"`
	Tool        string `json:"tool"`
	Outcome     string `json:"outcome"`
	DurationUS  int64  `json:"duration_us"`
	Bytes       int64  `json:"bytes"`
	WrittenAt   string `json:"written_at"`
}

// Call decodes e.Data as a call event.
func (e SSE) Call(t testing.TB) CallEvent {
	t.Helper()
	var c CallEvent
	if err := json.Unmarshal([]byte(e.Data), &c); err != nil {
		t.Fatalf("relaytest: event data %q: %v", e.Data, err)
	}
	return c
}

// Stream is an open event stream.
type Stream struct {
	Resp   *http.Response
	events chan SSE
	cancel context.CancelFunc
	done   chan struct{}
	err    error
}

// OpenStream opens GET url with Accept: text/event-stream and the token,
// plus extra headers (name, value pairs). It fails t unless the answer is
// 200; the stream is closed in t.Cleanup.
func OpenStream(t testing.TB, client *http.Client, url, token string, headers ...string) *Stream {
	t.Helper()
	s, status := TryStream(t, client, url, token, headers...)
	if status != http.StatusOK {
		t.Fatalf("relaytest: GET %s: status %d", url, status)
	}
	return s
}

// TryStream is OpenStream that returns the status instead of failing on a
// non-200 answer (then the stream is nil).
func TryStream(t testing.TB, client *http.Client, url, token string, headers ...string) (*Stream, int) {
	t.Helper()
	return tryStream(t, client, http.MethodGet, url, token, nil, headers)
}

// OpenPostStream opens a stream that answers a POST of body, such as a
// subscriptions/listen request (Content-Type: application/json, Accept:
// application/json, text/event-stream), with the token and extra headers
// (name, value pairs; a value "" removes the header). It fails t unless
// the answer is 200; the stream is closed in t.Cleanup.
func OpenPostStream(t testing.TB, client *http.Client, url, token string, body []byte, headers ...string) *Stream {
	t.Helper()
	h := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)
	s, status := tryStream(t, client, http.MethodPost, url, token, body, h)
	if status != http.StatusOK {
		t.Fatalf("relaytest: POST %s: status %d", url, status)
	}
	return s
}

func tryStream(t testing.TB, client *http.Client, method, url, token string, body []byte, headers []string) (*Stream, int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	setHeaders(req.Header, headers)
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("relaytest: %s %s: %v", method, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode
	}
	s := &Stream{Resp: resp, events: make(chan SSE, 1024), cancel: cancel, done: make(chan struct{})}
	go s.read(ctx)
	t.Cleanup(s.Close)
	return s, resp.StatusCode
}

// setHeaders sets headers (name, value pairs) on h; a value "" removes
// the header.
func setHeaders(h http.Header, headers []string) {
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			h.Del(headers[i])
			continue
		}
		h.Set(headers[i], headers[i+1])
	}
}

func (s *Stream) read(ctx context.Context) {
	defer close(s.done)
	defer close(s.events)
	r := bufio.NewReader(s.Resp.Body)
	var cur SSE
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			s.err = err
			return
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if cur != (SSE{}) {
				cur.Received = time.Now()
				select {
				case s.events <- cur:
				case <-ctx.Done():
					return
				}
				cur = SSE{}
			}
		case strings.HasPrefix(line, ":"):
			select {
			case s.events <- SSE{Comment: strings.TrimSpace(line[1:]), Received: time.Now()}:
			case <-ctx.Done():
				return
			}
		default:
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimPrefix(v, " ")
			switch k {
			case "id":
				cur.ID = v
			case "event":
				cur.Event = v
			case "data":
				if cur.Data != "" {
					cur.Data += "\n"
				}
				cur.Data += v
			}
		}
	}
}

// Next returns the next event, skipping comments; ok is false when the
// stream ended first. It fails t after WaitTimeout.
func (s *Stream) Next(t testing.TB) (SSE, bool) {
	t.Helper()
	for {
		e, ok := s.NextAny(t)
		if !ok || e.Comment == "" {
			return e, ok
		}
	}
}

// NextAny returns the next event or comment; ok is false when the stream
// ended first. It fails t after WaitTimeout.
func (s *Stream) NextAny(t testing.TB) (SSE, bool) {
	t.Helper()
	select {
	case e, ok := <-s.events:
		return e, ok
	case <-time.After(WaitTimeout):
		t.Fatalf("relaytest: no event within %s", WaitTimeout)
		return SSE{}, false
	}
}

// Ended waits for the stream to end and returns the read error (io.EOF
// for a clean end). It fails t after WaitTimeout.
func (s *Stream) Ended(t testing.TB) error {
	t.Helper()
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return s.err
			}
		case <-time.After(WaitTimeout):
			t.Fatalf("relaytest: the stream did not end within %s", WaitTimeout)
			return nil
		}
	}
}

// Close closes the stream and waits for its reader.
func (s *Stream) Close() {
	s.cancel()
	s.Resp.Body.Close()
	<-s.done
}

// Eventually polls cond until it holds, failing t with msg after WaitTimeout.
func Eventually(t testing.TB, msg string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("relaytest: %s: not so after %s", msg, WaitTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
