//go:build linux || darwin || freebsd

package history

import (
	"os"
	"syscall"
)

// lock takes an exclusive lock on f, released when f is closed.
func lock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}
