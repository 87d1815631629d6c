// Package mockupstream is the configurable slow, failing, bulky upstream that
// a system under test calls: an MCP-style tool server whose latency, answer
// sizes and failures follow a behaviour model that a test can change while it
// runs. The command mockupstream/cmd/mockupstream serves it; [StartT] runs it
// inside a test.
//
// # Endpoints
//
//   - POST / and POST /mcp: JSON-RPC 2.0, one request object per POST.
//     "initialize" answers the server's capabilities; "tools/list" answers
//     {"tools":[{"name","description","inputSchema"}…]} (tool_01 … tool_NN);
//     "tools/call" with params {"name","arguments"} answers
//     {"content":[{"type":"text","text":…}],"isError":bool}, where a tool
//     error has isError true and a message as text; "ping" answers {}. A
//     notification (no id) gets 202 and no body. Malformed requests get the
//     standard errors with HTTP 200: -32700 (not JSON), -32600 (not a
//     request object, a batch, a bad "jsonrpc", id or method), -32601
//     (unknown method), -32602 (bad params, unknown tool). initialize
//     answers the protocol version asked for when it is one of 2024-11-05,
//     2025-03-26, 2025-06-18 and 2025-11-25, else 2025-06-18; a request
//     whose MCP-Protocol-Version header names another version gets 400.
//   - /echo?delay=…&status=…&bytes=…: plain HTTP for targets that are not
//     MCP clients; what the query leaves out is drawn from the model.
//   - GET /healthz: 200 "ok".
//   - GET /admin/behavior, POST /admin/behavior (the whole [Behavior] as
//     JSON; 400 {"error": …} naming the field when invalid), GET
//     /admin/stats ([Stats]), POST /admin/reset (starting behaviour, zero
//     counters). [Client] wraps them. The admin endpoints need no token.
//
// The server keeps no state between requests but the counters, so any
// number of replicas can run.
//
// # Behaviour model
//
// Each request that the model governs (initialize, tools/list, tools/call,
// /echo) draws, from the seed and its sequence number, one outcome (ok,
// tool_error for tools/call only, http_5xx, reset, hang or slow_headers), a
// latency (Initialize, List or Call) and, for tools/call and /echo, a size
// from the mix. It is answered when the latency has passed; a hang is held
// until the client gives up or Faults.MaxHang passes. See [Behavior] for the
// fields and [Model.Draw] for the draw. Changing the behaviour affects the
// next request; calls already held keep their fate.
//
// In JSON, durations are Go duration strings ("1.2s", "250ms") or numbers
// of milliseconds; GET returns strings.
//
//	{"seed": 7, "tool_count": 20,
//	 "list": {"median": "250ms", "jitter": "100ms"},
//	 "call": {"median": "1.2s", "p95": "12s", "cap": "50s"},
//	 "tool_errors": 0.08,
//	 "sizes": [{"weight": 0.98, "bytes": 4096, "jitter": 2048},
//	           {"weight": 0.02, "bytes": 1048576, "jitter": 65536}],
//	 "faults": {"http_5xx": 0.01, "status": 503, "reset": 0.005,
//	            "hang": 0.001, "max_hang": "2m",
//	            "slow_headers": 0.01, "header_delay": "20s"}}
//
// # Environment (the command)
//
// The connector envelope, with its defaults:
//
//	PORT=8765            listen port (0 picks a free one); HOST, default all interfaces
//	AUTH_MODE=none       none, or bearer: "Authorization: Bearer <token>" required
//	AUTH_TOKEN=          with bearer, the one token accepted (empty: any)
//	LOG_REQUESTS=0       1 logs one line per request
//	TOOL_COUNT=20        tools listed
//	LIST_LATENCY_MS=250  tools/list latency, ± LIST_JITTER_MS=100
//	CALL_LATENCY_MS=1000 tools/call and /echo latency (the median), ± CALL_JITTER_MS=500
//	RESPONSE_BYTES=1024  tool text size, ± RESPONSE_JITTER_BYTES=0
//
// The richer model:
//
//	MODEL=envelope           preset the variables start from: envelope, or calibrated
//	                         (calls median 1.2 s, p95 12 s, cap 50 s; 8% tool errors;
//	                         4 KiB ± 2 KiB answers with 2% around 1 MiB)
//	SEED=0                   seed of the draws; 0 picks one (GET /admin/behavior shows it)
//	CALL_P95_MS, CALL_CAP_MS log-normal call latency with that p95 and cap
//	                         (setting CALL_P95_MS alone drops the preset's jitter);
//	                         LIST_P95_MS, LIST_CAP_MS likewise
//	TOOL_ERROR_FRACTION=0    tools/call answered isError:true
//	LARGE_RESPONSE_FRACTION=0, LARGE_RESPONSE_BYTES=1048576 (± 1/16)
//	HTTP_5XX_FRACTION=0, HTTP_5XX_STATUS=503
//	RESET_FRACTION=0         connection reset instead of an answer
//	HANG_FRACTION=0, MAX_HANG_MS=120000
//	SLOW_HEADERS_FRACTION=0, SLOW_HEADERS_MS (required with a fraction)
//	BEHAVIOR={…}             the whole model as JSON instead of the variables above
//	HOLD=park                park or sleep: how held calls wait (see below)
//
// All _MS variables are milliseconds, fractions are 0–1. An invalid value
// (negative latency, p95 below the median, a fraction outside [0, 1], an
// unknown AUTH_MODE) stops the command at start with a message naming the
// variable.
//
// # Holding calls cheaply
//
// A plain net/http handler that sleeps costs about 26 KiB per held call (its
// goroutine's stack and two 4 KiB bufio buffers). [HoldPark], the default,
// hijacks the connection once the request is read, waits in a goroutine
// whose stack stays at 2 KiB (a 1-byte Read with a deadline, which also sees
// a client give up), writes the answer itself and hands the connection back
// to the http.Server through a listener whose Accept returns requeued
// connections, so keep-alive works as before. The benchmarks in this
// package measure the memory per held call and the CPU per completed call
// of both modes.
package mockupstream
