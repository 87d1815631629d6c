package httpc_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// One prepared request serves every record: Call.Path replaces the path
// and query per send, on both engines; a path that would break the request
// line is refused before anything is sent.
func TestCallPath(t *testing.T) {
	srv := newServer(t)
	for _, engine := range []string{"lean", "nethttp"} {
		t.Run("engine="+engine, func(t *testing.T) {
			c, err := httpc.New(httpc.Options{NetHTTP: engine == "nethttp"})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			req, err := c.Prepare("GET", srv.URL+"/items/0?full=0", []httpc.Header{{Name: "X-A", Value: "1"}}, nil)
			require.NoError(t, err)
			var call httpc.Call
			call.KeepBody = true
			for i := range 3 {
				call.Path = fmt.Sprintf("/items/%d?full=%d", i+7, i)
				r := c.Exchange(context.Background(), req, &call)
				require.Equal(t, loadtest.OK, r.Outcome, r.Err)
				assert.Equal(t, fmt.Sprintf("/items/%d?full=%d", i+7, i), string(call.RespBody))
			}
			call.Path = ""
			require.Equal(t, loadtest.OK, c.Exchange(context.Background(), req, &call).Outcome)
			assert.Equal(t, "/items/0?full=0", string(call.RespBody), "no Path: the prepared one")
			for _, bad := range []string{"items/1", "/a b", "/x\r\nHost: evil"} {
				call.Path = bad
				r := c.Exchange(context.Background(), req, &call)
				assert.Equal(t, loadtest.ProtocolError, r.Outcome, "%q", bad)
				assert.ErrorContains(t, r.Err, "Call.Path must start with /")
			}
		})
	}
}
