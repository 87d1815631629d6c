package httpc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
)

// An idle connection gives its read and write buffers back to the pool,
// and the next request borrows them again.
func TestPool_IdleConnectionsHoldNoBuffers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	c, err := New(Options{})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	req, err := c.Prepare("GET", srv.URL, nil, nil)
	require.NoError(t, err)
	require.Equal(t, loadtest.OK, c.Do(context.Background(), req).Outcome)
	p := req.host
	p.mu.Lock()
	require.Len(t, p.idle, 1)
	assert.Nil(t, p.idle[0].buffers, "an idle connection holds no buffers")
	require.Len(t, p.free, 1)
	b := p.free[0]
	p.mu.Unlock()
	cn, _, err := p.acquire(context.Background(), time.Now().Add(time.Second))
	require.NoError(t, err)
	assert.Same(t, b, cn.buffers, "the next request borrows them")
	p.release(cn)
}
