package wsc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/wsc"
)

// rpcServer is a JSON-RPC 2.0 server over WebSocket for the tests. Its
// methods:
//
//   - echo: replies with an empty result;
//   - fail: replies with a JSON-RPC error;
//   - garbage: replies with a message cut short (its id readable);
//   - silent: never replies;
//   - push: replies, then pushes params.n notifications carrying
//     written_at, leaving out params.skip of them;
//   - batch: replies and pushes params.n notifications in one frame,
//     a line each;
//   - stall: replies, then reads nothing for params.ms milliseconds;
//   - close: closes with close code params.code;
//   - drop: ends the connection without a close frame.
type rpcServer struct {
	handshake time.Duration // wait before accepting the upgrade
	readPause time.Duration // wait after reading each message
	accepted  atomic.Int64
}

type rpcRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		N, Skip, MS, Code int
		Written           string `json:"written"`
	} `json:"params"`
}

func (s *rpcServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	time.Sleep(s.handshake)
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s.accepted.Add(1)
	defer ws.CloseNow()
	ws.SetReadLimit(64 << 20)
	ctx := r.Context()
	for {
		_, msg, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var req rpcRequest
		if err := json.Unmarshal(msg, &req); err != nil {
			return
		}
		reply := func(body string) { _ = ws.Write(ctx, websocket.MessageText, []byte(body)) }
		switch req.Method {
		case "echo":
			reply(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID))
		case "fail":
			reply(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":"nope"}}`, req.ID))
		case "garbage":
			reply(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":`, req.ID))
		case "silent":
		case "push":
			reply(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID))
			for i := range req.Params.N - req.Params.Skip {
				written := time.Now().UTC().Format(time.RFC3339Nano)
				if req.Params.Written != "" {
					written = req.Params.Written
				}
				reply(fmt.Sprintf(`{"jsonrpc":"2.0","method":"note","params":{"n":%d,"written_at":%q}}`, i, written))
			}
		case "batch": // the reply and params.n notifications in one frame
			frame := fmt.Sprintf(`{"id":%s,"result":{}}`, req.ID)
			for i := range req.Params.N {
				frame += fmt.Sprintf("\n{\"method\":\"note\",\"params\":{\"n\":%d,\"written_at\":%q}}", i, time.Now().UTC().Format(time.RFC3339Nano))
			}
			reply(frame + "\n")
		case "stall":
			reply(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID))
			time.Sleep(time.Duration(req.Params.MS) * time.Millisecond)
		case "close":
			_ = ws.Close(websocket.StatusCode(req.Params.Code), "bye")
			return
		case "drop":
			return // CloseNow: no close frame
		}
		time.Sleep(s.readPause)
	}
}

func serve(t *testing.T, s *rpcServer) string {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/rpc"
}

// samples is a Sink that keeps what it is given.
type samples struct {
	mu  sync.Mutex
	all []sample
}

type sample struct {
	kind string
	lat  time.Duration
	r    loadtest.Response
}

func (s *samples) Record(kind string, lat time.Duration, r loadtest.Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, sample{kind, lat, r})
}

func (s *samples) of(kind string) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []sample
	for _, x := range s.all {
		if x.kind == kind {
			out = append(out, x)
		}
	}
	return out
}

// await waits until n samples of kind have reached the sink. A counter in
// Stats moves before its sample is recorded (the sample goes to the sink
// outside the connection's lock), so a test that reads the sink waits on
// the sink itself, not on a counter.
func (s *samples) await(t *testing.T, kind string, n int) []sample {
	t.Helper()
	require.Eventually(t, func() bool { return len(s.of(kind)) >= n }, 5*time.Second, time.Millisecond,
		"%d %s samples", n, kind)
	return s.of(kind)
}

func request(method string, params string) func(id string) []byte {
	return func(id string) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":{%s}}`, id, method, params)
	}
}

func open(t *testing.T, cfg wsc.Config) (*wsc.Group, *wsc.Conn) {
	t.Helper()
	g, err := wsc.NewGroup(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { g.Close() })
	c := g.Open(t.Context())
	return g, c
}

// TestCloseOutcome: each close code, and each end without one, is the
// outcome the package documents.
func TestCloseOutcome(t *testing.T) {
	closed := func(code websocket.StatusCode) error {
		return fmt.Errorf("read: %w", websocket.CloseError{Code: code, Reason: "r"})
	}
	for _, tc := range []struct {
		name string
		err  error
		want loadtest.Outcome
	}{
		{"no error", nil, loadtest.OK},
		{"normal closure", closed(websocket.StatusNormalClosure), loadtest.OK},
		{"going away", closed(websocket.StatusGoingAway), loadtest.OK},
		{"no status", closed(websocket.StatusNoStatusRcvd), loadtest.OK},
		{"protocol error", closed(websocket.StatusProtocolError), loadtest.ProtocolError},
		{"invalid payload", closed(websocket.StatusInvalidFramePayloadData), loadtest.ProtocolError},
		{"too big to read", fmt.Errorf("read: %w", websocket.ErrMessageTooBig), loadtest.ProtocolError},
		{"abnormal", closed(websocket.StatusAbnormalClosure), loadtest.TransportError},
		{"TLS", closed(websocket.StatusTLSHandshake), loadtest.TransportError},
		{"policy", closed(websocket.StatusPolicyViolation), loadtest.AppError},
		{"internal error", closed(websocket.StatusInternalError), loadtest.AppError},
		{"try again later", closed(websocket.StatusTryAgainLater), loadtest.AppError},
		{"application's own", closed(4000), loadtest.AppError},
		{"deadline", fmt.Errorf("read: %w", context.DeadlineExceeded), loadtest.Timeout},
		{"lost", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), loadtest.TransportError},
	} {
		assert.Equal(t, tc.want, wsc.CloseOutcome(tc.err), tc.name)
	}
}

// TestOutcomesOfRealCalls: calls against a server map to the outcomes the
// package documents, and the connection's end is a sample of its own.
func TestOutcomesOfRealCalls(t *testing.T) {
	rec := &samples{}
	g, c := open(t, wsc.Config{URL: serve(t, &rpcServer{}), Sink: rec, CallTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	for _, tc := range []struct {
		method string
		want   loadtest.Outcome
		err    string
	}{
		{"echo", loadtest.OK, ""},
		{"fail", loadtest.AppError, "nope"},
		{"garbage", loadtest.ProtocolError, "not valid JSON"},
		{"silent", loadtest.Timeout, "no reply"},
		{"echo", loadtest.OK, ""}, // the connection survives a lost reply
	} {
		r := c.Func(request(tc.method, ""))(ctx)
		assert.Equal(t, tc.want, r.Outcome, "%s: %v", tc.method, r.Err)
		if tc.err != "" && assert.Error(t, r.Err, tc.method) {
			assert.Contains(t, r.Err.Error(), tc.err)
		}
		assert.Zero(t, r.Queued, "%s: nothing was written before it", tc.method)
	}
	// The target closes with its own code: the call still owed is lost,
	// later calls find the connection down, and the connection's sample
	// says how it ended.
	r := c.Func(request("close", `"code":4000`))(ctx)
	assert.Equal(t, loadtest.TransportError, r.Outcome, "%v", r.Err)
	<-c.Done()
	r = c.Func(request("echo", ""))(ctx)
	assert.Equal(t, loadtest.TransportError, r.Outcome, "%v", r.Err)
	assert.Contains(t, r.Err.Error(), "not connected")

	ends := rec.of(wsc.KindConn)
	require.Len(t, ends, 1)
	assert.Equal(t, loadtest.AppError, ends[0].r.Outcome)
	assert.Contains(t, ends[0].r.Err.Error(), "code 4000")
	assert.Equal(t, 4000, int(websocket.CloseStatus(ends[0].r.Err)))
	connects := rec.of(wsc.KindConnect)
	require.Len(t, connects, 1)
	assert.Equal(t, loadtest.OK, connects[0].r.Outcome)

	st := g.Stats()
	assert.Equal(t, int64(6), st.Calls, "the call after the close sent nothing")
	assert.Equal(t, int64(4), st.Replies, "echo, fail, garbage, echo")
	assert.Equal(t, int64(1), st.Dropped)
	assert.Zero(t, st.Connected)
}

// TestAnEndWithoutCloseFrameAndReconnects: a connection lost without a
// close frame is a transport error; with Reconnect it is dialled again
// and calls go through.
func TestAnEndWithoutCloseFrameAndReconnects(t *testing.T) {
	srv := &rpcServer{}
	rec := &samples{}
	g, c := open(t, wsc.Config{URL: serve(t, srv), Sink: rec, Reconnect: true, MinBackoff: 10 * time.Millisecond})
	require.Equal(t, loadtest.OK, c.Func(request("echo", ""))(t.Context()).Outcome)
	r := c.Func(request("drop", ""))(t.Context())
	assert.Equal(t, loadtest.TransportError, r.Outcome, "%v", r.Err)
	require.Eventually(t, func() bool { return g.Stats().Reconnects == 1 && g.Stats().Connected == 1 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, loadtest.OK, c.Func(request("echo", ""))(t.Context()).Outcome)
	ends := rec.of(wsc.KindConn)
	require.Len(t, ends, 1)
	assert.Equal(t, loadtest.TransportError, ends[0].r.Outcome, "%v", ends[0].r.Err)
	assert.Contains(t, ends[0].r.Err.Error(), "without a close frame")
	assert.Equal(t, int64(2), srv.accepted.Load())
	assert.Equal(t, int64(1), g.Stats().Dropped)
}

// TestARefusedUpgrade: a target that answers the handshake with a status
// is that status's outcome, and the error says what happened.
func TestARefusedUpgrade(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no sockets here", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	rec := &samples{}
	g, c := open(t, wsc.Config{URL: "ws" + strings.TrimPrefix(srv.URL, "http"), Sink: rec})
	<-c.Done()
	connects := rec.of(wsc.KindConnect)
	require.Len(t, connects, 1)
	assert.Equal(t, loadtest.StatusOutcome(http.StatusServiceUnavailable), connects[0].r.Outcome)
	assert.Contains(t, connects[0].r.Err.Error(), "refused the upgrade with HTTP 503")
	assert.Equal(t, int64(1), g.Stats().ConnectErrors)
	r := c.Func(request("echo", ""))(t.Context())
	assert.Equal(t, loadtest.TransportError, r.Outcome)
}

// TestPushedMessagesAreDeliveredOrMissed: every expected notification
// that arrives is an OK delivery sample and a fan-out sample from its
// written time; one the target leaves out is judged missing once
// DeliveryTimeout passes, an AppError that says what is missing.
func TestPushedMessagesAreDeliveredOrMissed(t *testing.T) {
	rec := &samples{}
	g, c := open(t, wsc.Config{URL: serve(t, &rpcServer{}), Sink: rec, DeliveryTimeout: 300 * time.Millisecond})
	ctx := t.Context()
	push := func(n, skip int) {
		c.Expect(n)
		r := c.Func(request("push", fmt.Sprintf(`"n":%d,"skip":%d`, n, skip)))(ctx)
		require.Equal(t, loadtest.OK, r.Outcome, "%v", r.Err)
	}
	push(3, 0)
	require.Eventually(t, func() bool { return g.Stats().Delivered == 3 }, 5*time.Second, 5*time.Millisecond)
	assert.Zero(t, g.Stats().Missing)

	push(3, 1) // one of three never comes
	require.Eventually(t, func() bool { return g.Stats().Overdue == 1 }, 5*time.Second, 5*time.Millisecond)
	rec.await(t, wsc.KindDelivery, 6)
	st := g.Stats()
	assert.Equal(t, int64(6), st.Expected)
	assert.Equal(t, int64(5), st.Delivered)
	assert.Equal(t, int64(1), st.Missing)

	var ok, missed []sample
	for _, s := range rec.of(wsc.KindDelivery) {
		if s.r.Outcome == loadtest.OK {
			ok = append(ok, s)
		} else {
			missed = append(missed, s)
		}
	}
	assert.Len(t, ok, 5)
	require.Len(t, missed, 1)
	assert.Equal(t, loadtest.AppError, missed[0].r.Outcome)
	assert.Contains(t, missed[0].r.Err.Error(), "has not arrived")
	assert.GreaterOrEqual(t, missed[0].lat, 300*time.Millisecond, "judged once the timeout passed")

	fan := rec.of(wsc.DefaultFanoutKind)
	assert.Len(t, fan, 5, "one fan-out sample per pushed message")
	for _, s := range fan {
		assert.Less(t, s.lat, 2*time.Second)
	}
	assert.Equal(t, int64(5), st.FanoutSamples)
	assert.Equal(t, int64(2+5), st.Messages, "two replies, five notifications")
}

// TestAFanoutDelayIsReceiptLessWrittenTime: a message written 400 ms ago
// shows a 400 ms fan-out delay; one whose written time does not parse is
// a malformed sample, not a delay.
func TestAFanoutDelayIsReceiptLessWrittenTime(t *testing.T) {
	rec := &samples{}
	g, c := open(t, wsc.Config{URL: serve(t, &rpcServer{}), Sink: rec})
	ctx := t.Context()
	past := time.Now().Add(-400 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	require.Equal(t, loadtest.OK, c.Func(request("push", fmt.Sprintf(`"n":1,"written":%q`, past)))(ctx).Outcome)
	require.Equal(t, loadtest.OK, c.Func(request("push", `"n":1,"written":"yesterday"`))(ctx).Outcome)
	require.Eventually(t, func() bool { return g.Stats().Messages == 4 }, 5*time.Second, 5*time.Millisecond)
	rec.await(t, wsc.KindMalformed, 1)
	fan := rec.of(wsc.DefaultFanoutKind)
	require.Len(t, fan, 1)
	assert.GreaterOrEqual(t, fan[0].lat, 400*time.Millisecond)
	assert.Less(t, fan[0].lat, 1400*time.Millisecond)
	bad := rec.of(wsc.KindMalformed)
	require.Len(t, bad, 1)
	assert.Equal(t, loadtest.ProtocolError, bad[0].r.Outcome)
	assert.Contains(t, bad[0].r.Err.Error(), `"yesterday" does not parse`)
}

// TestAQueueInTheClientShows: a call whose message waits behind another
// one being written (a target that stopped reading) reports the wait as
// Queued; a call with nothing before it reports none.
func TestAQueueInTheClientShows(t *testing.T) {
	_, c := open(t, wsc.Config{URL: serve(t, &rpcServer{}), MaxMessageSize: 1 << 20})
	ctx := t.Context()
	// 32 MiB: more than the loopback socket's buffers hold, so its write
	// blocks until the target reads again. Built before the stall, whose
	// time it would eat on a busy host.
	big := request("echo", `"pad":"`+strings.Repeat("x", 32<<20)+`"`)("0")
	r := c.Func(request("stall", `"ms":1000`))(ctx)
	require.Equal(t, loadtest.OK, r.Outcome, "%v", r.Err)
	assert.Zero(t, r.Queued)

	var wg sync.WaitGroup
	var first loadtest.Response
	wg.Go(func() { first = c.Call(ctx, big, "0") })
	time.Sleep(100 * time.Millisecond)
	second := c.Func(request("echo", ""))(ctx)
	wg.Wait()
	require.Equal(t, loadtest.OK, first.Outcome, "%v", first.Err)
	require.Equal(t, loadtest.OK, second.Outcome, "%v", second.Err)
	assert.Zero(t, first.Queued)
	assert.Greater(t, second.Queued, 200*time.Millisecond, "it waited for the big message, which waited for the stalled target")
}

// TestARunSeesTheClientsQueue: a step whose calls outrun what the target
// reads on one connection (40 calls a second of 1 MiB; the target reads
// one message each 50 ms) backs up into the generator, and the run's
// self-check voids the step naming the knob; 10 calls a second spread
// over four connections is valid.
func TestARunSeesTheClientsQueue(t *testing.T) {
	run := func(rate float64, conns int) []string {
		g, err := wsc.NewGroup(wsc.Config{URL: serve(t, &rpcServer{readPause: 50 * time.Millisecond})})
		require.NoError(t, err)
		defer g.Close()
		calls := make([]func(context.Context) loadtest.Response, conns)
		for i := range calls {
			calls[i] = g.Open(t.Context()).Func(request("echo", `"pad":"`+strings.Repeat("x", 1<<20)+`"`))
		}
		var turn atomic.Int64
		res, err := loadtest.Run(t.Context(), loadtest.Scenario{
			Name: t.Name(),
			Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "echo", Weight: 1, Do: func(ctx context.Context) loadtest.Response {
				return calls[turn.Add(1)%int64(conns)](ctx)
			}}}},
			Plan: loadtest.Levels(0, 2*time.Second, rate),
			// The queue bound at 250 ms, not the default 10: a backed-up
			// connection queues seconds (p99 ~10 s here), while a 1 MiB
			// call built and written under -race on a busy 2-core host
			// waited 54 ms once with nothing backed up.
			SelfCheck: loadtest.SelfCheck{MaxHostSteal: -1, MaxHostOther: -1, MaxScheduleLag: -1, MaxCPU: -1, MaxQueueWait: 250 * time.Millisecond,
				PoolKnob: "WebSocket connections (wsc.Group.Open)"},
			Logf: t.Logf,
		})
		require.NoError(t, err)
		require.Len(t, res.Steps, 1)
		return res.Steps[0].InvalidReasons()
	}
	queued := run(40, 1)
	require.NotEmpty(t, queued, "40 calls a second where the target reads 20")
	assert.Contains(t, strings.Join(queued, "; "), "wsc.Group.Open")
	assert.Empty(t, run(10, 4), "10 calls a second over four connections")
}

// TestBadConfigIsRefused: what cannot work is refused before anything
// connects, the error naming the field and the fix.
func TestBadConfigIsRefused(t *testing.T) {
	for _, tc := range []struct {
		cfg  wsc.Config
		want string
	}{
		{wsc.Config{URL: "http://127.0.0.1:1/ws"}, "give a ws:// or wss:// URL"},
		{wsc.Config{URL: "ws:///ws"}, "has no host"},
		{wsc.Config{URL: "ws://127.0.0.1:1", CallTimeout: -time.Second}, "negative duration"},
		{wsc.Config{URL: "ws://127.0.0.1:1", MaxMessageSize: -1}, "MaxMessageSize -1 is negative"},
	} {
		_, err := wsc.NewGroup(tc.cfg)
		if assert.Error(t, err, tc.cfg.URL) {
			assert.Contains(t, err.Error(), tc.want)
		}
	}
}

// TestJSONRPCID: a reply's id, never a notification's.
func TestJSONRPCID(t *testing.T) {
	for msg, want := range map[string]string{
		`{"jsonrpc":"2.0","id":7,"result":{}}`:                    "7",
		`{"id":"a-1","result":{"id":9}}`:                          "a-1",
		`{"result":{"id":9},"id":3}`:                              "3",
		`{"jsonrpc":"2.0","method":"note","id":4}`:                "",
		`{"jsonrpc":"2.0","id":null,"error":{}}`:                  "",
		`{"id":12,"result":`:                                      "12",
		`not json`:                                                "",
		`{"params":{"id":5},"jsonrpc":"2.0","method":"progress"}`: "",
	} {
		assert.Equal(t, want, string(wsc.JSONRPCID([]byte(msg))), msg)
	}
}

// TestWrittenAtField: string and numeric written times, and the errors
// that name the fix.
func TestWrittenAtField(t *testing.T) {
	at := time.Date(2026, 11, 30, 4, 0, 0, 123456789, time.UTC)
	got, err := wsc.WrittenAtField("written_at")([]byte(`{"params":{"written_at":"2026-11-30T04:00:00.123456789Z"}}`))
	require.NoError(t, err)
	assert.True(t, got.Equal(at))
	got, err = wsc.WrittenAtField("ts", wsc.UnixMillis)([]byte(`{"ts": 1796011200123}`))
	require.NoError(t, err)
	assert.Equal(t, int64(1796011200123), got.UnixMilli())
	_, err = wsc.WrittenAtField("ts")([]byte(`{"ts":1796011200123}`))
	assert.ErrorContains(t, err, "say its unit")
	_, err = wsc.WrittenAtField("ts")([]byte(`{"other":1}`))
	assert.True(t, errors.Is(err, wsc.ErrNoWrittenAt))
}

// TestLinesSplitABatchedFrame: with Lines, a frame holding a reply and
// three notifications, a line each, is one reply and three pushed
// messages, each delivered and each a fan-out sample.
func TestLinesSplitABatchedFrame(t *testing.T) {
	rec := &samples{}
	g, c := open(t, wsc.Config{URL: serve(t, &rpcServer{}), Sink: rec, Lines: true})
	c.Expect(3)
	r := c.Func(request("batch", `"n":3`))(t.Context())
	require.Equal(t, loadtest.OK, r.Outcome, "%v", r.Err)
	require.Eventually(t, func() bool { return g.Stats().Delivered == 3 }, 5*time.Second, 5*time.Millisecond)
	st := g.Stats()
	assert.Equal(t, int64(4), st.Messages)
	assert.Equal(t, int64(1), st.Replies)
	assert.Equal(t, int64(3), st.FanoutSamples)
	assert.Len(t, rec.of(wsc.DefaultFanoutKind), 3)
}
