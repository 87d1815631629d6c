package mockupstream_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestServer_StatsUnderConcurrency(t *testing.T) {
	const workers, each = 8, 150
	for _, hold := range holdModes {
		t.Run("hold="+string(hold), func(t *testing.T) {
			b := instant()
			b.Seed = 99
			b.Call = mockupstream.Latency{Median: ms(2), Jitter: ms(2)}
			b.ToolErrors = 0.3
			b.Faults = mockupstream.Faults{HTTP5xx: 0.1}
			b.Sizes = []mockupstream.Size{{Weight: 1, Bytes: 300, Jitter: 200}}
			loc := start(t, b, hold)

			var (
				mu        sync.Mutex
				bodyBytes int64
				statuses  = map[int]int{}
				toolErrs  int
				wg        sync.WaitGroup
			)
			for w := range workers {
				wg.Go(func() {
					c := newClient(30 * time.Second)
					for i := range each {
						status, body := post(t, c, loc.URL+"/mcp", toolCall(w*each+i, "tool_02"))
						isErr := status == 200 && strings.Contains(string(body), `"isError":true`)
						mu.Lock()
						bodyBytes += int64(len(body))
						statuses[status]++
						if isErr {
							toolErrs++
						}
						mu.Unlock()
					}
				})
			}
			wg.Wait()

			// The draws depend only on the seed and the sequence number,
			// so the set of outcomes is known whatever the interleaving.
			m, err := mockupstream.NewModel(b)
			require.NoError(t, err)
			want := map[mockupstream.Outcome]int64{}
			for n := range uint64(workers * each) {
				want[m.Draw(mockupstream.KindCall, n).Outcome]++
			}

			s := loc.Server.Stats()
			assert.Equal(t, int64(workers*each), s.Served)
			assert.Zero(t, s.InFlight)
			assert.Positive(t, s.MaxInFlight)
			assert.LessOrEqual(t, s.MaxInFlight, int64(workers))
			assert.Equal(t, int64(workers*each), s.ByMethod["tools/call"])
			assert.Equal(t, want[mockupstream.OK], s.ByOutcome["ok"])
			assert.Equal(t, want[mockupstream.ToolError], s.ByOutcome["tool_error"])
			assert.Equal(t, want[mockupstream.HTTP5xx], s.ByOutcome["http_5xx"])
			assert.Equal(t, int64(toolErrs), s.ByOutcome["tool_error"], "as the clients saw them")
			assert.Equal(t, int64(statuses[503]), s.ByOutcome["http_5xx"], "as the clients saw them")
			assert.Equal(t, bodyBytes, s.BytesSent, "body bytes the clients read")
		})
	}
}

func TestServer_Faults(t *testing.T) {
	for _, hold := range holdModes {
		t.Run("hold="+string(hold), func(t *testing.T) {
			t.Run("fault=reset", func(t *testing.T) {
				b := instant()
				b.Call = mockupstream.Latency{Median: ms(10)}
				b.Faults.Reset = 1
				loc := start(t, b, hold)
				_, err := newClient(10*time.Second).Post(loc.URL+"/mcp", "application/json", strings.NewReader(toolCall(1, "tool_01")))
				require.Error(t, err)
				assert.True(t, errors.Is(err, syscall.ECONNRESET), "want a connection reset, got %v", err)
				s := loc.Server.Stats()
				assert.Equal(t, int64(1), s.ByOutcome["reset"])
				assert.Zero(t, s.InFlight)
			})
			t.Run("fault=reset at once", func(t *testing.T) {
				b := instant()
				b.Faults.Reset = 1
				loc := start(t, b, hold)
				_, err := newClient(10*time.Second).Post(loc.URL+"/mcp", "application/json", strings.NewReader(toolCall(1, "tool_01")))
				assert.True(t, errors.Is(err, syscall.ECONNRESET), "want a connection reset, got %v", err)
			})
			t.Run("fault=hang", func(t *testing.T) {
				b := instant()
				b.Faults = mockupstream.Faults{Hang: 1, MaxHang: ms(60_000)}
				loc := start(t, b, hold)
				_, err := newClient(100*time.Millisecond).Post(loc.URL+"/mcp", "application/json", strings.NewReader(toolCall(1, "tool_01")))
				require.Error(t, err, "no answer before the client's timeout")
				// The hang ends when the client gives up.
				eventually(t, loc, func(s mockupstream.Stats) bool { return s.ByOutcome["hang"] == 1 && s.InFlight == 0 }, "hang counted")
			})
			t.Run("fault=hang bounded", func(t *testing.T) {
				b := instant()
				b.Faults = mockupstream.Faults{Hang: 1, MaxHang: ms(50)}
				loc := start(t, b, hold)
				_, err := newClient(10*time.Second).Post(loc.URL+"/mcp", "application/json", strings.NewReader(toolCall(1, "tool_01")))
				require.Error(t, err, "closed without an answer after MaxHang")
				assert.NotErrorIs(t, err, context.DeadlineExceeded)
				eventually(t, loc, func(s mockupstream.Stats) bool { return s.ByOutcome["hang"] == 1 && s.InFlight == 0 }, "hang counted")
			})
			t.Run("fault=slow headers", func(t *testing.T) {
				b := instant()
				b.Faults = mockupstream.Faults{SlowHeaders: 1, HeaderDelay: ms(50)}
				loc := start(t, b, hold)
				t0 := time.Now()
				a := rpc(t, nil, loc.URL+"/mcp", toolCall(1, "tool_01"))
				assert.GreaterOrEqual(t, time.Since(t0), 50*time.Millisecond)
				assert.Nil(t, a.Error)
				assert.Equal(t, int64(1), loc.Server.Stats().ByOutcome["slow_headers"])
			})
			t.Run("fault=client gone", func(t *testing.T) {
				b := instant()
				b.Call = mockupstream.Latency{Median: ms(60_000)}
				loc := start(t, b, hold)
				_, err := newClient(50*time.Millisecond).Post(loc.URL+"/mcp", "application/json", strings.NewReader(toolCall(1, "tool_01")))
				require.Error(t, err)
				eventually(t, loc, func(s mockupstream.Stats) bool { return s.ByOutcome["client_gone"] == 1 && s.InFlight == 0 }, "client gone counted")
			})
		})
	}
}

func TestServer_ShutdownCutsOffHeldCalls(t *testing.T) {
	for _, hold := range holdModes {
		t.Run("hold="+string(hold), func(t *testing.T) {
			b := instant()
			b.Call = mockupstream.Latency{Median: ms(60_000)}
			loc, err := mockupstream.Start(mockupstream.Config{Behavior: b, Hold: hold})
			require.NoError(t, err)
			t.Cleanup(func() { _ = loc.Close() })
			const calls = 20
			errs := make(chan error, calls)
			for i := range calls {
				go func() {
					_, err := newClient(30*time.Second).Post(loc.URL+"/mcp", "application/json", strings.NewReader(toolCall(i, "tool_01")))
					errs <- err
				}()
			}
			eventually(t, loc, func(s mockupstream.Stats) bool { return s.InFlight == calls }, "all calls held")
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			assert.ErrorIs(t, loc.Server.Shutdown(ctx), context.DeadlineExceeded, "held calls outlive the grace period")
			for range calls {
				assert.Error(t, <-errs, "a cut-off call fails")
			}
			s := eventually(t, loc, func(s mockupstream.Stats) bool { return s.InFlight == 0 }, "nothing in flight")
			assert.Equal(t, int64(calls), s.ByOutcome["aborted"])
		})
	}
}

func TestServer_ShutdownWaitsForCallsDue(t *testing.T) {
	b := instant()
	b.Call = mockupstream.Latency{Median: ms(50)}
	loc, err := mockupstream.Start(mockupstream.Config{Behavior: b})
	require.NoError(t, err)
	t.Cleanup(func() { _ = loc.Close() })
	done := make(chan rpcAnswer, 1)
	go func() { done <- rpc(t, nil, loc.URL+"/mcp", toolCall(1, "tool_01")) }()
	eventually(t, loc, func(s mockupstream.Stats) bool { return s.InFlight == 1 }, "call held")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, loc.Server.Shutdown(ctx))
	a := <-done
	assert.Nil(t, a.Error, "the held call was answered before shutdown finished")
	assert.Equal(t, int64(1), loc.Server.Stats().ByOutcome["ok"])
}

func TestServer_BearerAuth(t *testing.T) {
	for _, tc := range []struct {
		name   string
		token  string // server's; empty accepts any
		header string
		status int
	}{
		{"token=any/header=none", "", "", 401},                    // no header
		{"token=any/header=empty", "", "Bearer ", 401},            // empty token
		{"token=any/header=basic", "", "Basic dXNlcjpwdw==", 401}, // another scheme
		{"token=any/header=bearer", "", "Bearer abc", 200},        // any token
		{"token=set/header=wrong", "s3cret", "Bearer abc", 401},   // wrong token
		{"token=set/header=right", "s3cret", "Bearer s3cret", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			loc := mockupstream.StartT(t, mockupstream.Config{Behavior: instant(), Auth: mockupstream.AuthBearer, Token: tc.token})
			for _, path := range []string{"/mcp", "/echo"} {
				req, err := http.NewRequest("POST", loc.URL+path, strings.NewReader(toolCall(1, "tool_01")))
				require.NoError(t, err)
				if tc.header != "" {
					req.Header.Set("Authorization", tc.header)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				resp.Body.Close()
				assert.Equal(t, tc.status, resp.StatusCode, path)
				if tc.status == 401 {
					assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
				}
			}
			// Probes and admin need no token.
			require.NoError(t, loc.Client.Health(t.Context()))
			_, err := loc.Client.Stats(t.Context())
			require.NoError(t, err)
		})
	}
}

func TestServer_AsHandlerOfAnotherServer(t *testing.T) {
	// Through httptest's server the calls cannot be parked: they sleep.
	b := instant()
	b.Call = mockupstream.Latency{Median: ms(10)}
	s, err := mockupstream.New(mockupstream.Config{Behavior: b})
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t0 := time.Now()
	a := rpc(t, nil, ts.URL+"/mcp", toolCall(1, "tool_01"))
	assert.Nil(t, a.Error)
	assert.GreaterOrEqual(t, time.Since(t0), 10*time.Millisecond)
	assert.Equal(t, int64(1), s.Stats().ByOutcome["ok"])
}

func TestServer_SleepHoldsForTheDrawnLatency(t *testing.T) {
	// In virtual time the held call ends exactly when its draw says.
	synctest.Test(t, func(t *testing.T) {
		b := mockupstream.Calibrated()
		b.Seed = 21
		m, err := mockupstream.NewModel(b)
		require.NoError(t, err)
		s, err := mockupstream.New(mockupstream.Config{Behavior: b, Hold: mockupstream.HoldSleep})
		require.NoError(t, err)
		for n := range uint64(20) {
			d := m.Draw(mockupstream.KindCall, n)
			req := httptest.NewRequest("POST", "/mcp", strings.NewReader(toolCall(int(n), "tool_01")))
			rec := httptest.NewRecorder()
			t0 := time.Now()
			s.ServeHTTP(rec, req)
			assert.Equal(t, d.Delay, time.Since(t0), "request %d", n)
			assert.Equal(t, d.Outcome == mockupstream.ToolError, strings.Contains(rec.Body.String(), `"isError":true`))
			if d.Outcome == mockupstream.OK {
				var a rpcAnswer
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &a))
				var res callResult
				require.NoError(t, json.Unmarshal(a.Result, &res))
				assert.Len(t, res.Content[0].Text, int(d.Bytes))
			}
		}
		assert.Equal(t, int64(20), s.Stats().Served)
	})
}
