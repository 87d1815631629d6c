//go:build race

package httpc

// raceEnabled: the race detector sees the net package's reads and writes
// as synchronising (the bytes one goroutine writes happen before another
// reads them) and not raw system calls, so under it connections keep the
// net package's I/O; TestRawConn checks the raw connection itself.
const raceEnabled = true
