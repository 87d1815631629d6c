package sse_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/result"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// sample is one recorded sample.
type sample struct {
	latency time.Duration
	resp    loadtest.Response
}

// sink is a loadtest.Sink that keeps every sample by kind.
type sink struct {
	mu sync.Mutex
	by map[string][]sample
}

func (s *sink) Record(kind string, latency time.Duration, r loadtest.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.by == nil {
		s.by = map[string][]sample{}
	}
	s.by[kind] = append(s.by[kind], sample{latency, r})
}

func (s *sink) get(kind string) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.by[kind]...)
}

func (s *sink) outcomes(kind string) []loadtest.Outcome {
	var out []loadtest.Outcome
	for _, x := range s.get(kind) {
		out = append(out, x.resp.Outcome)
	}
	return out
}

// pipeTarget serves streams over net.Pipe inside a synctest bubble: serve
// gets the attempt number (from 1), the request head and the connection.
type pipeTarget struct {
	mu      sync.Mutex
	attempt int
	serve   func(attempt int, head string, c net.Conn)
}

func (p *pipeTarget) dial(ctx context.Context, addr string, secure bool, serverName string) (net.Conn, error) {
	client, server := net.Pipe()
	p.mu.Lock()
	p.attempt++
	n := p.attempt
	p.mu.Unlock()
	go func() {
		defer server.Close()
		br := bufio.NewReader(server)
		var head strings.Builder
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			head.WriteString(l)
			if l == "\r\n" {
				break
			}
		}
		p.serve(n, head.String(), server)
	}()
	return client, nil
}

const okHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"

// hold blocks until the client closes the connection.
func hold(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

func newGroup(t *testing.T, cfg sse.Config) *sse.Group {
	t.Helper()
	if cfg.URL == "" {
		cfg.URL = "http://127.0.0.1:9/events"
	}
	g, err := sse.NewGroup(cfg)
	require.NoError(t, err)
	return g
}

func TestStream_FanoutAndFirstEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		target := &pipeTarget{serve: func(_ int, _ string, c net.Conn) {
			_, _ = io.WriteString(c, okHead)
			time.Sleep(100 * time.Millisecond)
			// The target wrote the event 250 ms before sending it.
			written := time.Now().Add(-250 * time.Millisecond).UTC().Format(time.RFC3339Nano)
			_, _ = fmt.Fprintf(c, "id: 1\nevent: call\ndata: {\"id\":1,\"written_at\":%q}\n\n", written)
			time.Sleep(time.Second)
			// An event stamped in the future: clock skew, recorded as 0.
			future := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
			_, _ = fmt.Fprintf(c, "id: 2\ndata: {\"written_at\":%q}\n\n", future)
			// An event without a stamp: no fan-out sample.
			_, _ = io.WriteString(c, "id: 3\ndata: {}\n\n")
			// A stamp in a layout nobody gave: malformed, never silently
			// left out.
			_, _ = io.WriteString(c, "id: 4\ndata: {\"written_at\":\"2026-11-30 04:00:00.123Z\"}\n\n")
			hold(c)
		}}
		g := newGroup(t, sse.Config{Dial: target.dial, Sink: rec})
		s := g.Open(t.Context())
		time.Sleep(5 * time.Second)
		synctest.Wait()
		st := s.Close()

		fan := rec.get("fanout")
		require.Len(t, fan, 2)
		assert.Equal(t, 250*time.Millisecond, fan[0].latency, "receipt minus written_at")
		assert.Equal(t, time.Duration(0), fan[1].latency)
		first := rec.get(sse.KindFirstEvent)
		require.Len(t, first, 1)
		assert.Equal(t, 100*time.Millisecond, first[0].latency, "connect to first event")
		assert.Equal(t, int64(4), st.Events)
		assert.Equal(t, int64(2), st.FanoutSamples)
		assert.Equal(t, int64(1), st.ClockSkew)
		assert.Equal(t, int64(1), st.BadWrittenAt)
		bad := rec.get(sse.KindMalformed)
		require.Len(t, bad, 1)
		assert.ErrorContains(t, bad[0].resp.Err, `written_at "2026-11-30 04:00:00.123Z" does not parse`)
		assert.Equal(t, "4", s.LastEventID())
		assert.Equal(t, sse.DefaultClockName, st.Clock)
		assert.Equal(t, []loadtest.Outcome{loadtest.OK}, rec.outcomes(sse.KindStream), "ended by Close: OK")
		assert.Equal(t, int64(0), st.Drops)
	})
}

func TestStream_KeepaliveHealth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		target := &pipeTarget{serve: func(_ int, _ string, c net.Conn) {
			_, _ = io.WriteString(c, okHead+": hi\n\n")
			time.Sleep(time.Second)
			_, _ = io.WriteString(c, ": keepalive\n\n") // on time
			time.Sleep(5 * time.Second)                 // silent for 5 intervals
			_, _ = io.WriteString(c, ": keepalive\n\n")
			hold(c)
		}}
		g := newGroup(t, sse.Config{Dial: target.dial, Sink: rec, KeepaliveInterval: time.Second})
		s := g.Open(t.Context())

		time.Sleep(2500 * time.Millisecond) // 1.5 s after the last keepalive
		synctest.Wait()
		assert.Equal(t, int64(0), s.Stats().Unhealthy, "silent for less than twice the interval")

		time.Sleep(time.Second) // 2.5 s of silence
		synctest.Wait()
		st := s.Stats()
		assert.Equal(t, int64(1), st.Unhealthy)
		assert.Equal(t, int64(1), st.UnhealthyNow)

		time.Sleep(3 * time.Second) // the keepalive came at 6 s
		synctest.Wait()
		st = s.Stats()
		assert.Equal(t, int64(1), st.Unhealthy, "one silence is one episode")
		assert.Equal(t, int64(0), st.UnhealthyNow)
		assert.Equal(t, int64(3), st.Comments)
		assert.Equal(t, int64(0), st.Drops, "a silent stream is unhealthy, not dropped")
		s.Close()
		h := rec.get(sse.KindHealth)
		require.Len(t, h, 1)
		assert.Equal(t, loadtest.Timeout, h[0].resp.Outcome)
		assert.Equal(t, 2*time.Second, h[0].latency)
		assert.Equal(t, int64(1), g.Stats().Unhealthy)
	})
}

func TestStream_ReconnectWithLastEventID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &sink{}
		var heads []string
		var mu sync.Mutex
		target := &pipeTarget{serve: func(n int, head string, c net.Conn) {
			mu.Lock()
			heads = append(heads, head)
			mu.Unlock()
			switch n {
			case 1:
				_, _ = io.WriteString(c, okHead+"retry: 2000\nid: 1\ndata: a\n\nid: 2\ndata: b\n\n")
				// Drop the stream.
			case 2:
				_, _ = io.WriteString(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
			default:
				_, _ = io.WriteString(c, okHead+"id: 3\ndata: c\n\n")
				hold(c)
			}
		}}
		g := newGroup(t, sse.Config{Dial: target.dial, Sink: rec, Header: []httpc.Header{{Name: "Authorization", Value: "Bearer t"}}})
		s := g.Open(t.Context(), httpc.Header{Name: "X-Forwarded-For", Value: "198.18.0.1"})
		s.Expect(3)
		time.Sleep(time.Minute)
		synctest.Wait()
		st := s.Close()

		require.Len(t, heads, 3)
		assert.NotContains(t, heads[0], "Last-Event-ID")
		assert.Contains(t, heads[1], "Last-Event-ID: 2\r\n")
		assert.Contains(t, heads[2], "Last-Event-ID: 2\r\n")
		for _, h := range heads {
			assert.Contains(t, h, "Accept: text/event-stream\r\n")
			assert.Contains(t, h, "Authorization: Bearer t\r\n")
			assert.Contains(t, h, "X-Forwarded-For: 198.18.0.1\r\n")
		}
		assert.Equal(t, int64(1), st.Drops)
		assert.Equal(t, int64(1), st.ConnectErrors)
		assert.Equal(t, int64(2), st.Connects)
		assert.Equal(t, int64(1), st.Reconnects)
		assert.Equal(t, int64(3), st.Events)
		assert.Equal(t, int64(0), st.Missing)
		assert.Equal(t, []loadtest.Outcome{loadtest.OK, loadtest.HTTP5xx, loadtest.OK}, rec.outcomes(sse.KindConnect))
		assert.Equal(t, []loadtest.Outcome{loadtest.TransportError, loadtest.OK}, rec.outcomes(sse.KindStream))
		assert.Equal(t, []loadtest.Outcome{loadtest.OK, loadtest.OK, loadtest.OK}, rec.outcomes(sse.KindDelivery), "one sample per expected event")
	})
}

func TestStream_BadInput(t *testing.T) {
	tests := []struct {
		name      string
		response  string
		kind      string
		want      loadtest.Outcome
		errSubstr string
	}{
		// Not an event stream.
		{"content-type", "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}", sse.KindConnect, loadtest.ProtocolError, "text/event-stream"},
		// Not HTTP.
		{"status-line", "SSH-2.0-OpenSSH\r\n\r\n", sse.KindConnect, loadtest.ProtocolError, "status line"},
		// Broken chunked framing ends the connection.
		{"chunked", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", sse.KindStream, loadtest.ProtocolError, "chunk size"},
		// An oversize event is skipped; the stream goes on.
		{"oversize", okHead + "data: " + strings.Repeat("x", 300) + "\n\ndata: ok\n\n", sse.KindMalformed, loadtest.ProtocolError, "MaxEventSize"},
		// A 401 is the HTTP outcome of the connect.
		{"unauthorized", "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", sse.KindConnect, loadtest.HTTP4xx, "401"},
	}
	for _, tt := range tests {
		t.Run("case="+tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &sink{}
				target := &pipeTarget{serve: func(n int, _ string, c net.Conn) {
					if n == 1 {
						_, _ = io.WriteString(c, tt.response)
					}
					hold(c)
				}}
				g := newGroup(t, sse.Config{Dial: target.dial, Sink: rec, MaxEventSize: 100})
				s := g.Open(t.Context())
				time.Sleep(50 * time.Millisecond)
				synctest.Wait()
				s.Close()
				got := rec.get(tt.kind)
				require.NotEmpty(t, got)
				assert.Equal(t, tt.want, got[0].resp.Outcome)
				assert.ErrorContains(t, got[0].resp.Err, tt.errSubstr)
				if tt.want == loadtest.ProtocolError {
					assert.Positive(t, s.Stats().ProtocolErrors)
				}
				if tt.name == "oversize" {
					assert.Equal(t, int64(1), s.Stats().Events, "the event after the oversize one arrives")
				}
			})
		})
	}
}

func TestStream_204StopsReconnecting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &pipeTarget{serve: func(_ int, _ string, c net.Conn) {
			_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
		}}
		g := newGroup(t, sse.Config{Dial: target.dial})
		s := g.Open(t.Context())
		<-s.Done()
		assert.Equal(t, 1, target.attempt)
	})
}

func TestStream_CancelStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &pipeTarget{serve: func(_ int, _ string, c net.Conn) {
			_, _ = io.WriteString(c, okHead)
			hold(c)
		}}
		g := newGroup(t, sse.Config{Dial: target.dial})
		ctx, cancel := context.WithCancel(t.Context())
		s := g.Open(ctx)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, int64(1), g.Stats().Connected)
		cancel()
		<-s.Done()
		assert.Equal(t, int64(0), g.Stats().Connected)
		assert.Equal(t, int64(0), g.Stats().Drops, "a stream ended by the run is not a drop")
	})
}

func TestNewGroup_BadInput(t *testing.T) {
	tests := []struct {
		name string
		cfg  sse.Config
		want string
	}{
		// No scheme.
		{"url", sse.Config{URL: "127.0.0.1/events"}, "scheme"},
		// Wrong scheme.
		{"scheme", sse.Config{URL: "ws://127.0.0.1/events"}, "scheme"},
		// Negative duration.
		{"duration", sse.Config{URL: "http://127.0.0.1/", KeepaliveInterval: -time.Second}, "negative duration"},
		// Tiny buffer.
		{"buffer", sse.Config{URL: "http://127.0.0.1/", BufferSize: 10}, "BufferSize"},
		// Header injection.
		{"header", sse.Config{URL: "http://127.0.0.1/", Header: []httpc.Header{{Name: "A", Value: "x\r\nB: y"}}}, "header"},
	}
	for _, tt := range tests {
		t.Run("case="+tt.name, func(t *testing.T) {
			_, err := sse.NewGroup(tt.cfg)
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

// Healthy fails a step with a missed keepalive or a malformed stream, and
// passes one with neither.
func TestHealthyCheck(t *testing.T) {
	step := func(kinds ...*result.KindResult) *loadtest.StepResult { return &loadtest.StepResult{Kinds: kinds} }
	check := sse.Healthy()
	assert.NoError(t, check.Evaluate(step(&result.KindResult{Kind: "fanout", Outcomes: map[loadtest.Outcome]int64{loadtest.OK: 5}})))
	err := check.Evaluate(step(&result.KindResult{Kind: sse.KindHealth, Outcomes: map[loadtest.Outcome]int64{loadtest.Timeout: 2}, Errors: []string{"silent for 31s"}}))
	assert.ErrorContains(t, err, "2 sse_health sample(s): [silent for 31s]")
	assert.Error(t, check.Evaluate(step(&result.KindResult{Kind: sse.KindMalformed, Outcomes: map[loadtest.Outcome]int64{loadtest.ProtocolError: 1}})))
}

// TestStreamsResumeCheck: a step whose dropped streams connected again
// passes; one where fewer connects succeeded than streams dropped fails,
// with the counts.
func TestStreamsResumeCheck(t *testing.T) {
	step := func(kinds ...*result.KindResult) *loadtest.StepResult { return &loadtest.StepResult{Kinds: kinds} }
	check := sse.StreamsResume()
	dropped := &result.KindResult{Kind: sse.KindStream, Outcomes: map[loadtest.Outcome]int64{loadtest.OK: 3, loadtest.TransportError: 20}}
	assert.NoError(t, check.Evaluate(step()), "no streams, nothing to resume")
	assert.NoError(t, check.Evaluate(step(dropped, &result.KindResult{Kind: sse.KindConnect, Outcomes: map[loadtest.Outcome]int64{loadtest.OK: 21}})))
	err := check.Evaluate(step(dropped, &result.KindResult{Kind: sse.KindConnect, Outcomes: map[loadtest.Outcome]int64{loadtest.OK: 12, loadtest.HTTP5xx: 30}}))
	assert.ErrorContains(t, err, "20 streams dropped, 12 connected again (30 connects failed)")
	assert.Error(t, check.Evaluate(step(dropped)), "dropped and never connected again")
}

// TestGroup_OpenFor: streams of one group opened for different sinks record
// into their own sink only, the group counts them all, and a closed
// stream leaves the group (Group.Close does not close it again).
func TestGroup_OpenFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		target := &pipeTarget{serve: func(n int, _ string, c net.Conn) {
			_, _ = io.WriteString(c, okHead)
			for i := range n { // stream n gets n events
				_, _ = fmt.Fprintf(c, "id: %d\ndata: {}\n\n", i+1)
			}
			hold(c)
		}}
		groupSink := &sink{}
		g := newGroup(t, sse.Config{Dial: target.dial, Sink: groupSink})
		a, b := &sink{}, &sink{}
		sa := g.OpenFor(t.Context(), a)
		synctest.Wait()
		sb := g.OpenFor(t.Context(), b)
		synctest.Wait()

		stA := sa.Close()
		assert.Equal(t, int64(1), stA.Events)
		assert.Len(t, a.get(sse.KindFirstEvent), 1, "stream a records into a")
		assert.Equal(t, []loadtest.Outcome{loadtest.OK}, a.outcomes(sse.KindStream))
		assert.Empty(t, b.get(sse.KindStream), "b's stream is still open")

		st := g.Close()
		assert.Equal(t, int64(3), st.Events, "the group counts both streams' events")
		assert.Equal(t, int64(2), sb.Stats().Events)
		assert.Equal(t, []loadtest.Outcome{loadtest.OK}, b.outcomes(sse.KindStream), "Group.Close closed b")
		assert.Len(t, a.get(sse.KindStream), 1, "a, closed before, was not closed again")
		assert.Empty(t, groupSink.get(sse.KindConnect), "nothing went to the group's sink")
	})
}
