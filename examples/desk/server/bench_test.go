package server_test

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/headroom-dev/headroom/examples/desk/server"
)

// BenchmarkEndpoints measures one request of each kind the modeled agents
// send, over HTTP on loopback against deskseed.Short, from parallel
// clients, with the design's knobs and with shared counts and the access
// cache off (mode=unshared).
//
//	go test -run '^$' -bench Endpoints -benchtime 2000x ./examples/desk/server/
func BenchmarkEndpoints(b *testing.B) {
	d := seeded(b)
	for _, m := range []struct {
		name string
		set  func(*server.Config)
	}{
		{"mode=default", func(*server.Config) {}},
		{"mode=unshared", func(c *server.Config) { c.SharedCounts, c.AccessCache = false, false }},
	} {
		_, base := d.start(b, m.set)
		var caseOf [61]int64
		for a := int64(1); a <= 60; a++ {
			caseOf[a] = d.count(b, `SELECT id FROM cases WHERE unit_id = $1 ORDER BY id LIMIT 1`, d.pop.Spec.UnitOf(a))
		}
		for _, r := range []struct {
			name   string
			method string
			path   func(agent int64) string
		}{
			{"inbox", "GET", func(int64) string { return "/api/inbox?view=open" }},
			{"counts", "GET", func(int64) string { return "/api/counts" }},
			{"case", "GET", func(a int64) string { return fmt.Sprintf("/api/cases/%d", caseOf[a]) }},
			{"presence", "POST", func(a int64) string { return fmt.Sprintf("/api/cases/%d/presence", caseOf[a]) }},
			{"search", "GET", func(int64) string { return "/api/search?q=printer" }},
		} {
			b.Run(m.name+"/route="+r.name, func(b *testing.B) {
				var next atomic.Int64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						a := next.Add(1)%60 + 1
						req, _ := http.NewRequest(r.method, base+r.path(a), nil)
						req.Header.Set("Authorization", "Bearer "+d.pop.Token(a))
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							b.Fatal(err)
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK {
							b.Fatalf("%s: %d", r.name, resp.StatusCode)
						}
					}
				})
			})
		}
	}
}
