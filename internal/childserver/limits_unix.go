//go:build unix

package childserver

import "syscall"

// RaiseFileLimit lifts this process's soft limit on open files to its hard
// limit, for a test that holds thousands of connections (the child it
// starts inherits it).
func RaiseFileLimit() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	if lim.Cur >= lim.Max {
		return nil
	}
	lim.Cur = lim.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}
