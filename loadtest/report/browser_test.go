//go:build linux

package report

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromiumBinary returns the headless browser to test the pages with:
// $HEADROOM_CHROMIUM, else the first of Debian's chromium and its usual
// other names found on $PATH; "" when there is none.
func chromiumBinary() string {
	if p := os.Getenv("HEADROOM_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browse runs the headless browser on the page at path with args (a
// --dump-dom or --screenshot), bounded by a timeout, and returns its
// standard output. The browser runs in its own process group with its own
// profile directory; when it returns, whatever of it is still running —
// found by that directory in its command line, as crashpad handlers start
// sessions of their own — is killed, and the test fails if anything had
// to be.
func browse(t *testing.T, bin, path string, args ...string) []byte {
	t.Helper()
	profile := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--no-default-browser-check", "--disable-extensions", "--disable-crash-reporter", "--disable-breakpad",
		"--hide-scrollbars", "--user-data-dir=" + profile, "--virtual-time-budget=5000"}, args...)
	all = append(all, "file://"+path)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = append(os.Environ(), "HOME="+profile)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the group, if anything is left of it
	}
	if left := reap(profile, 5*time.Second); len(left) > 0 {
		t.Errorf("chromium processes left behind, killed: %v", left)
	}
	require.NoError(t, err, "%s %s: %s", bin, strings.Join(all, " "), lastLines(stderr.String(), 10))
	return stdout.Bytes()
}

// reap waits up to d for every live process whose command line names dir
// to end, then kills those still running and returns their pids.
func reap(dir string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := processesNaming(dir)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return pids
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// processesNaming returns the pids of the live (not zombie) processes
// whose command line contains s.
func processesNaming(s string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(s)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The state follows the command's closing parenthesis.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var bodyTag = regexp.MustCompile(`<body[^>]*>`)

func attr(tag, name string) string {
	m := regexp.MustCompile(name + `="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestReportInBrowser loads a generated report in headless Chromium and
// checks that it laid out every plot with a size (the page's own script
// counts them into <body data-plots>) and that its screenshot is not
// blank. Set HEADROOM_SCREENSHOT=file.png to keep the screenshot.
func TestReportInBrowser(t *testing.T) {
	bin := chromiumBinary()
	if bin == "" {
		t.Skip("no chromium binary found: install Debian's chromium package (apt-get install -y chromium) or set HEADROOM_CHROMIUM to a Chrome/Chromium binary")
	}
	if testing.Short() {
		t.Skip("-short: no browser")
	}
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "users=40.json")
	res := fixture(t)
	require.NoError(t, res.WriteFile(jsonPath))
	require.NoError(t, WriteHTML(res, jsonPath))
	page := HTMLPath(jsonPath)
	figs, err := Figures(res, "")
	require.NoError(t, err)

	dom := browse(t, bin, page, "--dump-dom")
	body := bodyTag.Find(dom)
	require.NotNil(t, body, "no <body> in the DOM dumped:\n%s", lastLines(string(dom), 5))
	t.Logf("DOM: %s", body)
	assert.Equal(t, strconv.Itoa(len(figs)), attr(string(body), "data-plots"), "plots laid out with a non-zero size")
	assert.Equal(t, "fail", attr(string(body), "data-verdict"))

	shot := filepath.Join(dir, "shot.png")
	browse(t, bin, page, "--screenshot="+shot, "--window-size=1280,5000")
	f, err := os.Open(shot)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	b := img.Bounds()
	assert.Equal(t, image.Rect(0, 0, 1280, 5000), b)
	var ink, total int
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			total++
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				ink++
			}
			colours[(r>>11)<<10|(g>>11)<<5|bl>>11] = true
		}
	}
	t.Logf("screenshot: %.1f%% of pixels inked, %d colours", 100*float64(ink)/float64(total), len(colours))
	assert.Greater(t, float64(ink)/float64(total), 0.02, "the screenshot is (nearly) blank")
	assert.Greater(t, len(colours), 20, "the screenshot has too few colours for plots")
	if keep := os.Getenv("HEADROOM_SCREENSHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		require.NoError(t, os.WriteFile(keep, b, 0o644))
	}

	// The index page too.
	idx, err := Index(dir)
	require.NoError(t, err)
	body = bodyTag.Find(browse(t, bin, idx, "--dump-dom"))
	require.NotNil(t, body)
	assert.Equal(t, "1", attr(string(body), "data-results"))
}
