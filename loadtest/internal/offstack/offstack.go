// Package offstack runs deep work off a long-lived goroutine's stack.
//
// A goroutine that spends most of its life parked — a modeled user between
// calls, a held stream between events — costs its stack, and a stack never
// shrinks back to its starting size once it has grown: the runtime halves a
// parked goroutine's stack only while less than a quarter of it is in use,
// counting 800 bytes of guard, so a 4 KiB stack stays 4 KiB. Work with deep
// frames (a TLS read, JSON encoding, recording a sample) run through Run
// grows a short-lived goroutine's stack instead, which returns to the
// runtime's pool when it ends, and the parked goroutine keeps its starting
// 2 KiB.
package offstack

// Run runs f on a goroutine of its own and returns when f has returned.
// What f writes is visible to the caller after Run returns. A panic in f
// ends the program, as in any goroutine.
func Run(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}
