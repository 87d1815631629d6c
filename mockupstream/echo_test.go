package mockupstream_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/mockupstream"
)

func TestEcho(t *testing.T) {
	b := instant()
	b.Sizes = []mockupstream.Size{{Weight: 1, Bytes: 321}}
	b.Call = mockupstream.Latency{Median: ms(5)}
	for _, hold := range holdModes {
		t.Run("hold="+string(hold), func(t *testing.T) {
			loc := start(t, b, hold)
			for _, tc := range []struct {
				name     string
				query    string
				method   string
				status   int
				bytes    int
				minDelay time.Duration
				outcome  string
			}{
				// Nothing set: the model's latency and size.
				{"query=none", "", "GET", 200, 321, 5 * time.Millisecond, "ok"},
				// Size and status set; delay in milliseconds.
				{"query=all", "?delay=30&status=201&bytes=70000", "POST", 201, 70000, 30 * time.Millisecond, "ok"},
				// Delay as a Go duration.
				{"query=delay", "?delay=20ms&bytes=0", "GET", 200, 0, 20 * time.Millisecond, "ok"},
				// A 5xx status is counted as one.
				{"query=status 500", "?status=500&bytes=10&delay=0", "GET", 500, 10, 0, "http_5xx"},
				// A 4xx status too.
				{"query=status 404", "?status=404&bytes=10&delay=0", "GET", 404, 10, 0, "http_4xx"},
				// Headers only, with the size announced.
				{"query=head", "?bytes=2000&delay=0", "HEAD", 200, 0, 0, "ok"},
				// Bad parameters are refused, naming the parameter.
				{"bad=delay", "?delay=soon", "GET", 400, -1, 0, "http_4xx"},
				{"bad=negative delay", "?delay=-5ms", "GET", 400, -1, 0, "http_4xx"},
				{"bad=status", "?status=99", "GET", 400, -1, 0, "http_4xx"},
				{"bad=bytes", "?bytes=-1", "GET", 400, -1, 0, "http_4xx"},
				{"bad=bytes too big", "?bytes=999999999999", "GET", 400, -1, 0, "http_4xx"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					before := loc.Server.Stats()
					req, err := http.NewRequest(tc.method, loc.URL+"/echo"+tc.query, strings.NewReader("ignored body"))
					require.NoError(t, err)
					t0 := time.Now()
					resp, err := newClient(10 * time.Second).Do(req)
					require.NoError(t, err)
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					require.NoError(t, err)
					assert.GreaterOrEqual(t, time.Since(t0), tc.minDelay)
					assert.Equal(t, tc.status, resp.StatusCode, "body %.200s", body)
					switch {
					case tc.bytes >= 0:
						assert.Len(t, body, tc.bytes)
					default:
						param := strings.SplitN(strings.TrimPrefix(tc.query, "?"), "=", 2)[0]
						assert.Contains(t, string(body), "query parameter "+param+"=")
					}
					if tc.method == "HEAD" {
						assert.Equal(t, int64(2000), resp.ContentLength)
					}
					d := loc.Server.Stats().Sub(before)
					assert.Equal(t, int64(1), d.ByMethod["echo"])
					assert.Equal(t, int64(1), d.ByOutcome[tc.outcome])
				})
			}
		})
	}
}

func TestEcho_DrawsFaultsUnlessStatusIsSet(t *testing.T) {
	b := instant()
	b.Faults = mockupstream.Faults{HTTP5xx: 1, Status: 504}
	loc := start(t, b, mockupstream.HoldPark)
	resp, err := http.Get(loc.URL + "/echo?bytes=5")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 504, resp.StatusCode, "the model's fault")
	resp, err = http.Get(loc.URL + "/echo?bytes=5&status=200")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode, "an explicit status turns faults off")
}
