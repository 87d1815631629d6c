package loadtest

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Target describes the system under test for a result: how it was run and
// in what shape. Fixtures fill it; a scenario passes it in Scenario.Target.
type Target struct {
	// Backend is how the stack ran: "docker", "local" or "external".
	Backend string `json:"backend,omitempty"`
	// Engine is the container engine's version, when there is one.
	Engine string `json:"engine,omitempty"`
	// CPUs is the target's CPU limit in cores; 0 when unlimited.
	CPUs float64 `json:"cpus,omitempty"`
	// Memory is the target's memory limit in bytes; 0 when unlimited.
	Memory int64 `json:"memory,omitempty"`
	// Components lists every component of the stack.
	Components []Component `json:"components,omitempty"`
}

// Component is one part of the stack under test.
type Component struct {
	// Name is the component's role: "relay", "postgres", "caddy".
	Name string `json:"name"`
	// Version is the component's version, when known.
	Version string `json:"version,omitempty"`
	// Image is the container image, and Digest its content digest.
	Image  string `json:"image,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Replicas is how many instances ran; 0 means one.
	Replicas int `json:"replicas,omitempty"`
}

// Environment fingerprints where a result was measured. Its Class decides
// which results are comparable.
type Environment struct {
	// CPUModel is the host CPU's model name.
	CPUModel string `json:"cpu_model"`
	// Cores is the number of logical CPUs of the host.
	Cores int `json:"cores"`
	// GOMAXPROCS is the generator's.
	GOMAXPROCS int `json:"gomaxprocs"`
	// Kernel is the kernel release; OS the distribution.
	Kernel string `json:"kernel"`
	OS     string `json:"os"`
	// Memory is the host's total memory in bytes.
	Memory int64 `json:"memory"`
	// Go is the Go version the generator was built with.
	Go string `json:"go"`
	// Target is the system under test's shape.
	Target Target `json:"target"`
	// Class is derived from the CPU model, the cores, the backend and the
	// target's limits: results compare only within one class.
	Class string `json:"class"`
}

// fingerprint reads the host's facts and derives the class.
func (t Target) fingerprint() Environment {
	e := Environment{
		CPUModel:   cpuModel(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Kernel:     kernel(),
		OS:         osName(),
		Memory:     memTotal(),
		Go:         runtime.Version(),
		Target:     t,
	}
	e.Class = e.class()
	return e
}

// classFields are the facts that decide comparability, by name.
func (e Environment) classFields() [][2]string {
	return [][2]string{
		{"cpu_model", e.CPUModel},
		{"cores", strconv.Itoa(e.Cores)},
		{"backend", e.Target.Backend},
		{"target_cpus", strconv.FormatFloat(e.Target.CPUs, 'g', -1, 64)},
		{"target_memory", strconv.FormatInt(e.Target.Memory, 10)},
	}
}

func (e Environment) class() string {
	var parts []string
	for _, f := range e.classFields() {
		parts = append(parts, f[0]+"="+f[1])
	}
	return strings.Join(parts, ";")
}

// ClassDiff returns, for each field that decides comparability and differs
// between e and o, a line "field: e's value ≠ o's value".
func (e Environment) ClassDiff(o Environment) []string {
	var out []string
	of := o.classFields()
	for i, f := range e.classFields() {
		if f[1] != of[i][1] {
			out = append(out, fmt.Sprintf("%s: %q ≠ %q", f[0], f[1], of[i][1]))
		}
	}
	return out
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
