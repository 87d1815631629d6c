package loadtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// knob matches environment variables that are scenario knobs.
var knob = regexp.MustCompile(`^(LOADTEST_|RELAY_|HEADROOM_|TESTCONTAINERS_)|^(USERS|DURATION|STEPS|RATE|SEED|RAMP|HOLD|GAP|REPLICAS|GOMAXPROCS|GOGC|GOMEMLIMIT)$`)
var secret = regexp.MustCompile(`(?i)SECRET|TOKEN|PASSWORD|PASSWD|KEY|CREDENTIAL`)

func provenance() result.Provenance {
	p := result.Provenance{Args: os.Args, Env: map[string]string{}}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if knob.MatchString(k) && !secret.MatchString(k) {
			p.Env[k] = v
		}
	}
	if root, err := files.ModuleRoot(); err == nil {
		if out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
			p.Commit = strings.TrimSpace(string(out))
		}
		if out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil {
			p.Dirty = len(strings.TrimSpace(string(out))) > 0
		}
	}
	p.Command = commandLine(os.Args, testing.Testing())
	return p
}

// commandLine is the command that reproduces the run: a go test line
// rebuilt from a test binary's arguments, else the program's own
// arguments, shell-quoted (headroom run -url …).
func commandLine(args []string, test bool) string {
	if test {
		return goTestCommand(args)
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = shellQuote(a)
	}
	if len(q) > 0 {
		q[0] = filepath.Base(args[0])
	}
	return strings.Join(q, " ")
}

// goTestCommand rebuilds a go test command line from the test binary's
// arguments and build information.
func goTestCommand(args []string) string {
	cmd := []string{"go", "test"}
	pkg := "."
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" && s.Value != "" {
				cmd = append(cmd, "-tags", s.Value)
			}
		}
		// The test binary's path is the package's import path plus ".test".
		if p := strings.TrimSuffix(bi.Path, ".test"); p != "" {
			pkg = p
			if mod := bi.Main.Path; mod != "" && (p == mod || strings.HasPrefix(p, mod+"/")) {
				pkg = "./" + strings.TrimPrefix(strings.TrimPrefix(p, mod), "/")
			}
		}
	}
	for _, a := range args[1:] {
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case name == "test.paniconexit0" || name == "test.testlogfile" || name == "test.gocoverdir":
			continue
		case strings.HasPrefix(name, "test."):
			a = "-" + strings.TrimPrefix(name, "test.")
			if hasVal {
				a += "=" + shellQuote(val)
			}
		case hasVal:
			a = "-" + name + "=" + shellQuote(val)
		}
		cmd = append(cmd, a)
	}
	cmd = append(cmd, pkg)
	return strings.Join(cmd, " ")
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"$`\\|&;<>()*?[]{}!#~") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
