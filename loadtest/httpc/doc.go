// Package httpc is Headroom's HTTP engine: the client a workload uses to send
// requests to a target and classify every answer into a loadtest.Outcome.
//
// The default engine is a lean HTTP/1.1 client on raw connections. A request
// is rendered once by Prepare; each send writes the prepared bytes (plus the
// per-call headers and body, if any) with one system call and reads the
// answer through a per-connection buffer, discarding the body without
// allocating. Connections are kept alive and pooled per host; the pool never
// holds more than Options.MaxConnsPerHost connections, so past saturation a
// request waits for a free connection (and times out) instead of opening
// more; it opens at most Options.MaxDialing at once, so that a burst is
// served by the connections its requests free rather than by a dial each. Idle connections are reused most recently used first and close
// after Options.IdleTimeout, and hold no buffers while idle, so the pool
// holds what the recent concurrency needed, not the highest it reached. On this machine the lean engine spends about a third of the CPU per
// request of a naive net/http loop (see BenchmarkCPUPerRequest).
//
// For an open model at high rates, Client.Loop sends prepared plain-http
// requests on an event loop instead (loadtest.Arrivals.Loop): one sleep
// and wake-up for the arrivals due within Options.Quantum, no goroutine per
// request, the answers' latency ended at the kernel's receive time. On a
// virtual machine, where a thread's sleep and wake-up cost more than the
// request, it spends about two thirds of the CPU per request of the pooled
// engine (BenchmarkWholePath in loadtest).
//
// HTTP/2 (Options.HTTP2) and Options.NetHTTP use a tuned net/http Transport
// behind the same API.
//
// Outcomes: 2xx is OK; 3xx (a redirect, never followed), 4xx and 5xx are
// HTTP3xx, HTTP4xx and HTTP5xx — a Request's Expect narrows or widens what
// is OK (the status codes, the fewest body bytes); a deadline hit (the
// per-request timeout or the context's deadline) is Timeout; a failed
// dial, reset, closed connection or TLS failure is TransportError; an answer that is not HTTP (a bad status line, a broken
// chunked body, a body over the limit) is ProtocolError.
package httpc
