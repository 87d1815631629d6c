//go:build unix

package loadtest

import (
	"syscall"
	"time"
)

// processCPU returns the user plus system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fileLimit returns the soft limit on this process's open descriptors, 0
// when unknown.
func fileLimit() int64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil || l.Cur > 1<<40 {
		return 0
	}
	return int64(l.Cur)
}
