// Package wsc holds WebSocket connections open for a load test, as each
// modeled user's browser or app would, and measures what such a user
// experiences: time to connect, calls answered over the socket, fan-out
// delay of the messages the target pushes (receipt time minus the time the
// target wrote the message), messages delivered against messages expected,
// and how each connection ended.
//
// It runs on github.com/coder/websocket. A Group shares one Config and one
// set of counters; Group.Open holds one connection for a user, one reader
// goroutine per connection, and Conn.Close (or Group.Close, or the end of
// the user's context) closes it with a close handshake.
//
// Calls: Conn.Call sends a text message and waits for the reply whose id
// is the call's (Config.ID, by default the "id" member of a JSON-RPC
// response), its latency measured by the caller's core; the Response is
// the call's outcome (Config.CheckReply, by default JSONRPCReply):
//
//   - OK for a reply;
//   - AppError for a reply with a JSON-RPC "error" member;
//   - ProtocolError for a reply that is not valid JSON;
//   - Timeout when the call's deadline (its context or Config.CallTimeout)
//     ends before the reply;
//   - TransportError when the connection is not connected, or is lost
//     before the reply.
//
// A connection writes one message at a time: a call whose message waits
// for those written before it (a target that reads slowly backs writes up)
// reports the wait as Response.Queued, a queue inside the generator that a
// run's self-check (loadtest.SelfCheck.MaxQueueWait) holds against the
// step. Config.Lines splits frames that batch several messages, a line
// each, as Centrifugo's JSON protocol does.
//
// Every other message is pushed: it counts in Stats.Messages, gives a
// fan-out sample when it carries a written time (Config.WrittenAt, by
// default a JSON field "written_at" holding an RFC 3339 time), may satisfy
// an expectation (Conn.Expect, Conn.ExpectID) and goes to Config.OnMessage.
// A reply arriving after its call ended is such a message too.
//
// Samples go to a loadtest.Sink under these kinds: KindConnect (dial to
// handshake, one per attempt), Config.FanoutKind (default "fanout"),
// KindConn (one per connection that ended: how long it was held and how it
// ended, see CloseOutcome), KindMalformed (a written time that does not
// parse) and KindDelivery (one per expected message).
//
// Delivery: Conn.Expect and Conn.ExpectID register messages the target
// must push on the connection, such as one per completed call. Each is
// judged while the connection is held: OK with the wait when the message
// arrives, AppError when it has not arrived within Config.DeliveryTimeout
// (default 10 s). With a *loadtest.User or *loadtest.Recorder as Sink, its
// sample is attributed to the step in which the expectation was made
// (Expect begins a loadtest.Pending), and the step waits for it during its
// drain. A message still within the timeout when the connection stops (its
// user left) is not judged. This is the sse package's design, over a
// WebSocket.
//
// Checks: Healthy (no failed connect, no connection lost or closed with an
// error code, no malformed written time) and Resume (dropped connections
// connected again within the step).
//
// Churn: with Config.Reconnect, a connection the target drops is dialled
// again after a backoff (Config.MinBackoff doubling up to MaxBackoff) for
// as long as the user holds it; Stats.Reconnects counts the connections
// made again. Without it, a dropped connection stays down and its calls
// fail with TransportError.
package wsc
