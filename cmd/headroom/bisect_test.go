package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/internal/usermod"
)

// The throwaway module the bisect test builds a history of: a tiny service
// whose cost per request is a constant, and a load scenario for it that
// uses Headroom from this checkout (a replace directive).
const (
	tinyMain = `// Command tiny hashes a buffer rounds times per request.
package main

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"os"
)

func main() {
	buf := make([]byte, 1024)
	http.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {})
	http.HandleFunc("GET /work", func(w http.ResponseWriter, r *http.Request) {
		var sum [32]byte
		for range rounds {
			sum = sha256.Sum256(buf)
		}
		fmt.Fprintf(w, "%%x\n", sum[:4])
	})
	if err := http.ListenAndServe(os.Getenv("ADDR"), nil); err != nil {
		panic(err)
	}
}
`
	tinyRounds = `package main

// rounds is the work per request. %s
const rounds = %d
`
	tinyScenario = `package loadtest

import (
	"testing"
	"time"

	"github.com/headroom-dev/headroom/fixtures"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/httpc"
)

func TestMain(m *testing.M) { fixtures.Main(m) }

// TestLoad_Tiny drives tiny at 200 requests/s.
func TestLoad_Tiny(t *testing.T) {
	stack := fixtures.Start(t, fixtures.WithBackend(fixtures.BackendLocal),
		fixtures.WithTarget(fixtures.Service{Name: "tiny", Package: "./cmd/tiny", Env: map[string]string{"ADDR": "{{.Addr}}"}}),
		fixtures.WithDatabase(fixtures.NoDatabase), fixtures.WithoutUpstream(), fixtures.WithoutProxy())
	hc, err := httpc.New(httpc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	work, err := hc.Prepare("GET", stack.URL+"/work", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := loadtest.Test(t, loadtest.Scenario{
		Workload: &loadtest.Arrivals{Mix: []loadtest.Kind{{Name: "work", Weight: 1, Do: hc.Func(work)}}},
		Plan:     loadtest.Levels(500*time.Millisecond, 3*time.Second, 200),
		Checks:   []loadtest.Check{loadtest.FailuresBelow("work", 0.01)},
		Samplers: stack.Samplers(),
		System:   stack.System(),
	})
	if err := res.Err(); err != nil {
		t.Error(err)
	}
}
`
)

// git runs git in dir and returns its trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return strings.TrimSpace(string(out))
}

// TestBisectFindsThePlantedRegression builds a throwaway history of eight
// commits of a tiny service, the fifth of which triples its work per
// request (about twice its CPU per request), and runs `git bisect run
// headroom ab -bisect -matters 25%` over it: every step compares the
// commit under test with the first commit in interleaved trials, and git
// must name the fifth commit. With the default 5% band a step on a commit
// of the first's cost once came out inconclusive on a noisy machine (×1.11,
// p = 0.035), a skip git could not get past; a bisection for a change of
// known size says which changes matter.
func TestBisectFindsThePlantedRegression(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 trials of a few seconds per bisection step")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	tmp := t.TempDir()
	headroom := filepath.Join(tmp, "headroom")
	build := exec.Command("go", "build", "-o", headroom, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	mod := usermod.New(t, root, "example.com/tiny", map[string]string{
		".gitignore":            "/testdata/results/\n",
		"cmd/tiny/main.go":      tinyMain,
		"cmd/tiny/rounds.go":    fmt.Sprintf(tinyRounds, "", 300),
		"loadtest/tiny_test.go": tinyScenario,
	})
	repo, write := mod.Dir, mod.Write
	git(t, repo, "init", "-q", "-b", "main")
	var commits []string
	for i := 1; i <= 8; i++ {
		// The work dominates the service's cost per request, so that its
		// CPU, read in 10 ms clock ticks on the local backend, shows it.
		rounds := 300
		if i >= 5 {
			rounds = 900 // the planted regression, from the fifth commit on
		}
		write("cmd/tiny/rounds.go", fmt.Sprintf(tinyRounds, fmt.Sprintf("Revision %d.", i), rounds))
		git(t, repo, "add", "-A")
		git(t, repo, "commit", "-q", "-m", fmt.Sprintf("revision %d", i))
		commits = append(commits, git(t, repo, "rev-parse", "HEAD"))
	}

	git(t, repo, "bisect", "start", commits[7], commits[0])
	start := time.Now()
	run := exec.Command("git", "bisect", "run", headroom, "ab", "-bisect", "-base", commits[0],
		"-run", "TestLoad_Tiny", "-pkg", "./loadtest", "-tags", "", "-trials", "5", "-matters", "25%", "-timeout", "2m")
	run.Dir = repo
	out, err = run.CombinedOutput()
	t.Logf("git bisect run took %v:\n%s", time.Since(start).Round(time.Second), out)
	require.NoError(t, err, "%s", out)
	first := regexp.MustCompile(`(?m)^([0-9a-f]{40}) is the first bad commit`).FindStringSubmatch(string(out))
	require.NotNil(t, first, "%s", out)
	assert.Equal(t, commits[4], first[1], "the fifth commit tripled the work:\n%s", out)
	// Each step's report names the figure that moved.
	assert.Contains(t, string(out), "cpu/ok tiny")
	assert.Contains(t, string(out), "no change below 25% matters")
	git(t, repo, "bisect", "reset")
}
