package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/usermod"
)

// Two releases of a third-party service and of the library it uses, served
// by a module proxy in a temporary directory: greeter v1.1.0 moved to
// words v1.1.0, whose greeting costs three times the hashing per request.
const (
	greeterMain = `// Command greeter greets.
package main

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"

	"example.com/words"
)

func main() {
	buf := make([]byte, 1024)
	http.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {})
	http.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		var sum [32]byte
		for range words.Rounds() {
			sum = sha256.Sum256(buf)
		}
		fmt.Fprintf(w, "%s %x\n", words.Hello, sum[:4])
	})
	if err := http.ListenAndServe(os.Getenv("ADDR"), nil); err != nil {
		panic(err)
	}
}
`
	wordsSrc = `// Package words holds the greeting.
package words

// Hello is the greeting.
const Hello = "hello"

// Rounds is the work of a greeting.
func Rounds() int { return %s }
`
	// The user's own module: its load test, in 40 lines, of greeter as
	// it ships. It requires words v1.2.0 itself, which must not reach
	// the service's build.
	greeterScenario = `package loadtest

import (
	"testing"
	"time"

	"example.com/words"
	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

func TestMain(m *testing.M) { fixtures.Main(m) }

// TestLoad_Greeter drives greeter, built from its own go.mod, at 200/s.
func TestLoad_Greeter(t *testing.T) {
	greeter := fixtures.Service{Module: "example.com/greeter@v1.1.0", Package: "./cmd/greeter",
		Env: map[string]string{"ADDR": "{{.Addr}}"}, Ready: fixtures.HTTPReady("/readyz", 200)}
	stack := fixtures.Start(t, fixtures.WithBackend(fixtures.BackendLocal), fixtures.WithTarget(greeter),
		fixtures.WithDatabase(fixtures.NoDatabase), fixtures.WithoutUpstream(), fixtures.WithoutProxy())
	hc, err := httpc.New(httpc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	hello, err := hc.Prepare("GET", stack.URL+"/hello", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	hello = hello.WithExpect(httpc.Expect{Status: []int{200}, MinBytes: int64(len(words.Hello))})
	res := loadtest.Test(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "hello", Weight: 1, Do: hc.Func(hello)}}},
		Plan:     loadtest.Levels(500*time.Millisecond, 3*time.Second, 200),
		Checks:   []loadtest.Check{loadtest.FailuresBelow("hello", 0.01)},
		Samplers: stack.Samplers(),
		System:   stack.System(),
	})
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}
`
)

// TestABTwoReleasesOfAModule is a team's A/B of two releases of a service
// it does not own, from a module of its own outside this repository:
// `headroom ab -base-mod example.com/greeter@v1.0.0 -head-mod …@v1.1.0`
// builds each release with its own go.mod (words v1.0.0 and v1.1.0), not
// the test module's words v1.2.0 — which, lifting both to the cheap
// greeting, would call them the same — finds the release's regression in
// the CPU per request, and names both builds in the report. Nothing is
// downloaded: the releases come from a proxy in a temporary directory,
// Headroom's requirements from the module cache.
func TestABTwoReleasesOfAModule(t *testing.T) {
	if testing.Short() {
		t.Skip("ten trials of a few seconds")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	words := func(version, rounds string) usermod.Release {
		return usermod.Release{Path: "example.com/words", Version: version, Files: map[string]string{
			"go.mod": "module example.com/words\n\ngo 1.22\n", "words.go": strings.Replace(wordsSrc, "%s", rounds, 1)}}
	}
	greeter := func(version string, w usermod.Release) usermod.Release {
		return usermod.Release{Path: "example.com/greeter", Version: version, Files: map[string]string{
			"go.mod":              "module example.com/greeter\n\ngo 1.22\n\nrequire example.com/words " + w.Version + "\n",
			"go.sum":              usermod.GoSum(w),
			"cmd/greeter/main.go": greeterMain}}
	}
	w10, w11, w12 := words("v1.0.0", "300"), words("v1.1.0", "900"), words("v1.2.0", "300")
	proxy := usermod.Proxy(t, w10, w11, w12, greeter("v1.0.0", w10), greeter("v1.1.0", w11))
	cache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	require.NoError(t, err)
	t.Setenv("GOPROXY", proxy+",file://"+strings.TrimSpace(string(cache))+"/cache/download")
	t.Setenv("GOSUMDB", "off")
	// -mod=mod beside the caller's flags: the Makefile's -trimpath kept,
	// the user module's build finds every dependency compiled (a minute of
	// a cold run otherwise).
	t.Setenv("GOFLAGS", strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))

	mod := usermod.New(t, root, "example.com/team", map[string]string{"loadtest/greeter_test.go": greeterScenario})
	gomod, err := os.ReadFile(filepath.Join(mod.Dir, "go.mod"))
	require.NoError(t, err)
	mod.Write("go.mod", strings.Replace(string(gomod), "require (\n", "require (\n\texample.com/words v1.2.0\n", 1))
	sum, err := os.ReadFile(filepath.Join(mod.Dir, "go.sum"))
	require.NoError(t, err)
	mod.Write("go.sum", string(sum)+usermod.GoSum(w12))

	headroom := filepath.Join(t.TempDir(), "headroom")
	out, err := exec.Command("go", "build", "-o", headroom, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	report := filepath.Join(t.TempDir(), "ab")
	ab := exec.Command(headroom, "ab", "-run", "TestLoad_Greeter", "-pkg", "./loadtest", "-tags", "",
		"-base-mod", "example.com/greeter@v1.0.0", "-head-mod", "example.com/greeter@v1.1.0",
		"-trials", "5", "-matters", "25%", "-timeout", "2m", "-o", report)
	ab.Dir = mod.Dir
	start := time.Now()
	out, err = ab.CombinedOutput()
	t.Logf("headroom ab took %v:\n%s", time.Since(start).Round(time.Second), out)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "a regression exits 1")
	assert.Equal(t, exitFail, exit.ExitCode(), "%s", out)
	md, err := os.ReadFile(filepath.Join(report, "ab.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "A = example.com/greeter@v1.0.0, B = example.com/greeter@v1.1.0")
	assert.Contains(t, string(md), "A ran greeter v1.0.0 (example.com/greeter v1.0.0, go")
	assert.Contains(t, string(md), "B ran greeter v1.1.0 (example.com/greeter v1.1.0, go")
	assert.Contains(t, string(md), "cpu/ok greeter")
	assert.Contains(t, string(md), "regressed")
}
