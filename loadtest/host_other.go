//go:build !linux

package loadtest

// readHostTimes is Linux's; elsewhere the host is not measured.
func readHostTimes() (hostTimes, bool) { return hostTimes{}, false }
