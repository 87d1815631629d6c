package sse_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/headroom-dev/headroom/loadtest/httpc"
	"github.com/headroom-dev/headroom/loadtest/sse"
)

// Hold one user's stream, expect one event for a call the user made, and
// read the counts at the end. Fan-out samples go to Config.Sink (a
// *loadtest.Recorder or a user in a scenario).
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, ": keepalive\n\nid: 1\nevent: call\ndata: {\"id\":1,\"written_at\":%q}\n\n", time.Now().UTC().Format(time.RFC3339Nano))
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()

	g, err := sse.NewGroup(sse.Config{URL: srv.URL + "/api/events", KeepaliveInterval: 15 * time.Second})
	if err != nil {
		panic(err)
	}
	s := g.Open(context.Background(), httpc.Header{Name: "Authorization", Value: "Bearer user-1"})
	s.Expect(1)
	for s.Stats().Events < 1 {
		time.Sleep(time.Millisecond)
	}
	st := g.Close()
	fmt.Println("events", st.Events, "comments", st.Comments, "fanout", st.FanoutSamples, "missing", st.Missing)
	// Output: events 1 comments 1 fanout 1 missing 0
}
