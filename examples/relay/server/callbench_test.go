package server_test

import (
	"sync"
	"testing"

	"github.com/headroom-dev/headroom/examples/relay/internal/relaytest"
)

// BenchmarkToolsCallInProcess runs tools/call against an in-process relay
// and upstream (for profiling: -cpuprofile). The relay's own CPU per call
// is measured by BenchmarkToolsCallCPU in package main.
func BenchmarkToolsCallInProcess(b *testing.B) {
	for _, be := range backends {
		b.Run("db="+be.name, func(b *testing.B) {
			up := relaytest.Upstream(b, relaytest.Quick())
			r := startRelay(b, testConfig(b, be.dsn(b)))
			alice, _, _ := people(relaytest.MCPURL(up))
			r.DB.Insert(b, alice)
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"github__tool_01","arguments":{"query":"q"}}}`)
			b.ResetTimer()
			var wg sync.WaitGroup
			const clients = 8
			for w := range clients {
				wg.Go(func() {
					for i := w; i < b.N; i += clients {
						rep := relaytest.Post(b, b.Context(), r.Client, r.URL+"/mcp", alice.Token, body)
						if rep.Status != 200 {
							b.Errorf("status %d", rep.Status)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}
