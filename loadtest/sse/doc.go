// Package sse holds server-sent event streams open for a load test and
// measures what a streaming user experiences: time to connect and to the
// first event, fan-out delay (receipt time minus the time the target wrote
// the event), keepalive health, drops and reconnects with Last-Event-ID, and
// events delivered against events expected.
//
// Each stream is one goroutine on a raw connection with one small read
// buffer, reading a minimal HTTP/1.1 GET response (chunked or not, over
// TLS or not) through an incremental event-stream parser. On Linux an
// idle stream waits for its socket to be readable without reading (its
// buffer given back meanwhile, few frames on its stack), so that an idle
// held stream over plain HTTP costs about 6.5 KiB of generator memory
// (heap and stack; TLS adds about 7 KiB of crypto/tls state), against
// about 31 KiB for a streaming client on net/http (see
// BenchmarkHeldStreams).
//
// Samples go to a loadtest.Sink under these kinds: KindConnect (dial to
// response head), KindFirstEvent (dial to first event), Config.FanoutKind
// (default "fanout"), KindStream (one per connection that ended: how long
// it was held and how it ended), KindHealth (a keepalive missed), and
// KindDelivery (one per expected event). A malformed stream or an oversize
// event is a loadtest.ProtocolError sample under KindStream with an excerpt
// in Err; it never panics.
//
// Delivery: Stream.Expect and Stream.ExpectID register events the target
// must deliver on the stream, such as one per completed call. Each is
// judged while the stream is held: OK with the wait when the event
// arrives, AppError when it has not arrived within Config.DeliveryTimeout
// (default 10 s). With a *loadtest.User or *loadtest.Recorder as Sink,
// its sample is attributed to the step in which the call was made (Expect
// begins a loadtest.Pending), and the step waits for it during its drain,
// so an expectation made near the end of a hold is judged in that step,
// not lost or counted in the next. An event still within the timeout
// when the stream stops (its user left) is not judged.
package sse
