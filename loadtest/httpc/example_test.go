package httpc_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/headroom-dev/headroom/loadtest/httpc"
)

// A request function for the open model: prepare once, send many times.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, "hello")
	}))
	defer srv.Close()

	c, err := httpc.New(httpc.Options{MaxConnsPerHost: 64})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ok, _ := c.Prepare("GET", srv.URL+"/", []httpc.Header{{Name: "Authorization", Value: "Bearer t"}}, nil)
	missing, _ := c.Prepare("GET", srv.URL+"/missing", nil, nil)

	send := c.Func(ok) // func(context.Context) loadtest.Response
	r := send(context.Background())
	fmt.Println(r.Outcome, r.Bytes)
	r = c.Do(context.Background(), missing)
	fmt.Println(r.Outcome, r.Err)

	// Per-call parts: user 7's client address, the body kept.
	call := &httpc.Call{Header: []httpc.Header{httpc.ForwardedFor(7)}, KeepBody: true}
	r = c.Exchange(context.Background(), ok, call)
	fmt.Println(r.Outcome, call.Status, string(call.RespBody))
	// Output:
	// ok 5
	// http_4xx HTTP 404
	// ok 200 hello
}
