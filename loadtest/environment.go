package loadtest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/headroom-dev/headroom/loadtest/result"
)

// fingerprint reads the host's facts and derives the class.
func fingerprint(t result.System) result.Environment {
	e := result.Environment{
		CPUModel:   cpuModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Kernel:     kernel(),
		OS:         osName(),
		Memory:     memTotal(),
		Go:         runtime.Version(),
		Host:       hostID(),
		System:     t,
	}
	e.Class = e.Classify()
	return e
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func osName() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return runtime.GOOS
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return runtime.GOOS
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// hostID returns a short hash of what identifies this machine since its
// last boot: machine id, host name and boot id. Two clones of one machine
// image share a machine id, but not a boot.
func hostID() string {
	h := sha256.New()
	for _, p := range []string{"/etc/machine-id", "/var/lib/dbus/machine-id", "/proc/sys/kernel/random/boot_id"} {
		if b, err := os.ReadFile(p); err == nil {
			h.Write(bytes.TrimSpace(b))
		}
		h.Write([]byte{0})
	}
	name, _ := os.Hostname()
	h.Write([]byte(name))
	return hex.EncodeToString(h.Sum(nil))[:12]
}
