package result

import (
	"fmt"
	"strconv"
	"strings"
)

// System describes the system under test for a result: how it was run and
// in what shape. Fixtures fill it (Stack.System); a scenario passes it in
// Scenario.System.
type System struct {
	// Backend is how the stack ran: "docker", "local", "external", or
	// "deployed" (a system already running at Deployed, its shape —
	// limits, replicas, other parts — unknown).
	Backend string `json:"backend,omitempty"`
	// Deployed is the deployed system's base URL, with Backend "deployed".
	Deployed string `json:"deployed,omitempty"`
	// Engine is the container engine's version, when there is one.
	Engine string `json:"engine,omitempty"`
	// CPUs is the target's CPU limit in cores; 0 when unlimited.
	CPUs float64 `json:"cpus,omitempty"`
	// Memory is the target's memory limit in bytes; 0 when unlimited.
	Memory int64 `json:"memory,omitempty"`
	// Components lists every component of the stack.
	Components []Component `json:"components,omitempty"`
}

// The roles of a Component.
const (
	// RoleTarget is the service under test.
	RoleTarget = "target"
	// RoleService is another service of the system beside the target, such
	// as a worker.
	RoleService = "service"
	// RoleDatabase is the database the target uses.
	RoleDatabase = "database"
	// RoleUpstream is a service the target calls, such as the mock upstream.
	RoleUpstream = "upstream"
	// RoleProxy is the proxy in front of the target, such as Caddy.
	RoleProxy = "proxy"
	// RolePooler is a connection pooler in front of the database, such as
	// PgBouncer.
	RolePooler = "pooler"
	// RoleNetwork is what stands between components to fault the network
	// between them, such as Toxiproxy.
	RoleNetwork = "network"
)

// Component is one part of the stack under test.
type Component struct {
	// Name is the component's name: "relay", "postgres", "caddy".
	Name string `json:"name"`
	// Role is what it is to the system: RoleTarget, RoleService,
	// RoleDatabase, RoleUpstream, RoleProxy, RolePooler (stored as "kind").
	Role string `json:"kind,omitempty"`
	// Version is the component's version, when known.
	Version string `json:"version,omitempty"`
	// Image is the container image, and Digest its content digest.
	Image  string `json:"image,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Replicas is how many instances ran; 0 means one.
	Replicas int `json:"replicas,omitempty"`
	// Build is what a Go program says of its own build, when it is one.
	Build *Build `json:"build,omitempty"`
	// Settings are its settings that shape capacity, by name: a
	// database's memory and connection settings (shared_buffers,
	// max_connections, work_mem, …), a pooler's pool sizes.
	Settings map[string]string `json:"settings,omitempty"`
}

// Build is what a Go binary records of its build (debug/buildinfo): the
// code that ran, named as its module and version control know it.
type Build struct {
	// Path is the main package's import path; Module and Version its
	// module's path and version ("(devel)" for a working tree).
	Path    string `json:"path"`
	Module  string `json:"module,omitempty"`
	Version string `json:"version,omitempty"`
	// Commit is the revision of the repository it was built in, and Dirty
	// whether that tree had changes; empty when the build had no VCS
	// information.
	Commit string `json:"commit,omitempty"`
	Dirty  bool   `json:"dirty,omitempty"`
	// Go is the toolchain's version ("go1.26.8").
	Go string `json:"go"`
	// Settings are the build settings that change the code: CGO_ENABLED,
	// GOARCH and its level, -tags, -ldflags, -trimpath.
	Settings map[string]string `json:"settings,omitempty"`
}

// String names the build in a line: "github.com/pocketbase/pocketbase
// v0.36.8, go1.26.8", with the commit when there is no release version.
func (b *Build) String() string {
	what := b.Module
	if what == "" {
		what = b.Path
	}
	switch {
	case b.Version != "" && b.Version != "(devel)":
		what += " " + b.Version
	case b.Commit != "":
		c := b.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		what += " @" + c
		if b.Dirty {
			what += " (dirty)"
		}
	}
	return what + ", " + b.Go
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
	// Host identifies this machine since its last boot (a hash of its
	// machine id, host name and boot id): latency compares only between
	// results of one host.
	Host string `json:"host,omitempty"`
	// System is the system under test's shape.
	System System `json:"system"`
	// Class is derived from the CPU model, the cores, the backend and the
	// target's limits: results compare only within one class.
	Class string `json:"class"`
}

// classFields are the facts that decide comparability, by name.
func (e Environment) classFields() [][2]string {
	backend := e.System.Backend
	if e.System.ShapeUnknown() {
		// One deployment compares with itself only.
		backend += " " + e.System.Deployed
	}
	return [][2]string{
		{"cpu_model", e.CPUModel},
		{"cores", strconv.Itoa(e.Cores)},
		{"backend", backend},
		{"target_cpus", strconv.FormatFloat(e.System.CPUs, 'g', -1, 64)},
		{"target_memory", strconv.FormatInt(e.System.Memory, 10)},
	}
}

// Classify derives Class from the facts that decide comparability.
func (e Environment) Classify() string {
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

// ShapeUnknown reports whether the system under test was a deployment the
// run did not start, whose limits, replicas and other parts it cannot
// know.
func (s System) ShapeUnknown() bool { return s.Backend == "deployed" }
