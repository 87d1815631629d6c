//go:build !linux

package loadtest

import (
	"errors"
	"runtime"
	"runtime/debug"
)

// residentBytes approximates the resident set by the memory the Go runtime
// holds from the system.
func residentBytes() (int64, error) {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.Sys == 0 {
		return 0, errors.New("no memory statistics")
	}
	return int64(m.Sys), nil
}

// openFiles is unknown outside Linux.
func openFiles() int64 { return -1 }

// memoryLimit is GOMEMLIMIT when set.
func memoryLimit() int64 {
	if l := debug.SetMemoryLimit(-1); l > 0 && l < 1<<62 {
		return l
	}
	return 0
}

func kernel() string { return runtime.GOOS }
