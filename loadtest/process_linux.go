package loadtest

import (
	"errors"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// residentBytes returns this process's resident set size from /proc.
func residentBytes() (int64, error) {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, errors.New("unexpected /proc/self/statm")
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize()), err
}

// openFiles returns the number of descriptors this process holds open, or
// -1 when unknown.
func openFiles() int64 {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return -1
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return -1
	}
	return int64(len(names) - 1) // the directory itself
}

// memoryLimit returns the tightest bound on this process's memory in bytes:
// its cgroup's limit, GOMEMLIMIT and the host's memory; 0 when none is
// known.
func memoryLimit() int64 {
	limit := int64(math.MaxInt64)
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v > 0 {
				limit = min(limit, v)
			}
		}
	}
	if l := debug.SetMemoryLimit(-1); l > 0 {
		limit = min(limit, l)
	}
	if m := memTotal(); m > 0 {
		limit = min(limit, m)
	}
	if limit == math.MaxInt64 {
		return 0
	}
	return limit
}

func kernel() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}
