package loadtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// ProfileSource is a component of the system under test that serves
// net/http/pprof, such as the relay started with RELAY_PPROF=1.
type ProfileSource struct {
	// Component names it in the result: "relay".
	Component string
	// URL is the base of its pprof handlers:
	// "http://127.0.0.1:8080/debug/pprof".
	URL string
}

// profileKnob applies LOAD_PROFILE to s: "off" takes no profiles, a
// directory keeps every hold's there, and unset keeps the first failing
// step's beside the result (<result>.profiles).
func profileKnob(s *Scenario, resultPath string) {
	switch v := strings.TrimSpace(os.Getenv("LOAD_PROFILE")); v {
	case "off":
		s.Profiles = nil
	case "":
		if s.ProfileDir == "" {
			s.ProfileDir = strings.TrimSuffix(resultPath, ".json") + ".profiles"
		}
	default:
		s.ProfileDir, s.ProfileEvery = v, true
	}
}

// relativeProfiles makes the result's profile paths relative to the
// directory of its JSON file when they lie below it, so that a report
// links to them wherever the results are copied.
func relativeProfiles(res *Result, resultPath string) {
	dir := filepath.Dir(resultPath)
	for _, st := range res.Steps {
		for i, p := range st.Profiles {
			if !filepath.IsAbs(p.Path) {
				continue
			}
			if rel, err := filepath.Rel(dir, p.Path); err == nil && !strings.HasPrefix(rel, "..") {
				st.Profiles[i].Path = filepath.ToSlash(rel)
			}
		}
	}
}

// maxProfileCPU bounds the CPU profile taken during one hold.
const maxProfileCPU = 30 * time.Second

// profiler takes the profiles of a run's holds: a CPU profile ending with
// each hold (as long as the hold, up to 30 s) and the heap and goroutines
// at its end, from every source. Every hold's profiles are kept with
// ProfileEvery; otherwise only the first failing step's, so that a breach
// comes with its evidence and a passing run leaves nothing.
type profiler struct {
	sources []ProfileSource
	dir     string
	every   bool
	logf    func(string, ...any)
	client  *http.Client

	keptFail bool
	warned   sync.Map // source → true once an error was logged
}

func newProfiler(s Scenario) *profiler {
	if len(s.Profiles) == 0 || s.ProfileDir == "" {
		return nil
	}
	return &profiler{sources: s.Profiles, dir: s.ProfileDir, every: s.ProfileEvery, logf: s.Logf,
		client: &http.Client{Timeout: maxProfileCPU + 30*time.Second}}
}

// capture is the profiling of one hold.
type capture struct {
	p     *profiler
	step  int
	wg    sync.WaitGroup
	mu    sync.Mutex
	files []result.Profile
}

// start begins profiling the hold of step i, which lasts hold from now.
func (p *profiler) start(ctx context.Context, i int, hold time.Duration) *capture {
	if p == nil {
		return nil
	}
	c := &capture{p: p, step: i}
	secs := min(max(hold.Truncate(time.Second)-time.Second, time.Second), maxProfileCPU)
	delay := max(hold-secs-500*time.Millisecond, 0)
	for _, src := range p.sources {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			if !sleep(ctx, delay) {
				return
			}
			c.fetch(ctx, src, "cpu", fmt.Sprintf("/profile?seconds=%d", int(secs.Seconds())))
		}()
	}
	return c
}

// end takes the heap and goroutine profiles at the hold's end and waits
// for the CPU profiles.
func (c *capture) end(ctx context.Context) {
	if c == nil {
		return
	}
	for _, src := range c.p.sources {
		c.wg.Add(2)
		go func() { defer c.wg.Done(); c.fetch(ctx, src, "heap", "/heap") }()
		go func() { defer c.wg.Done(); c.fetch(ctx, src, "goroutine", "/goroutine") }()
	}
	c.wg.Wait()
}

// keep attaches the profiles to the step when they are to be kept, and
// removes them otherwise.
func (c *capture) keep(sr *StepResult) {
	if c == nil {
		return
	}
	first := sr.Verdict == result.Fail && !c.p.keptFail
	if c.p.every || first {
		c.p.keptFail = c.p.keptFail || first
		sr.Profiles = append(sr.Profiles, c.files...)
		for _, f := range c.files {
			c.p.logf("profile: %s", f.Path)
		}
		return
	}
	for _, f := range c.files {
		os.Remove(f.Path)
	}
	os.Remove(c.p.dir) // when nothing else is kept there
}

func (c *capture) fetch(ctx context.Context, src ProfileSource, kind, path string) {
	name := fmt.Sprintf("step%02d-%s-%s.pb.gz", c.step+1, files.SafeName(src.Component), kind)
	file := filepath.Join(c.p.dir, name)
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	err := c.download(ctx, strings.TrimSuffix(src.URL, "/")+path, file)
	if err != nil {
		if ctx.Err() == nil {
			if _, seen := c.p.warned.LoadOrStore(src.Component, true); !seen {
				c.p.logf("profile of %s (%s): %v (further errors not shown)", src.Component, kind, err)
			}
		}
		os.Remove(file)
		return
	}
	c.mu.Lock()
	c.files = append(c.files, result.Profile{Component: src.Component, Type: kind, Path: file})
	c.mu.Unlock()
}

func (c *capture) download(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	if err := os.MkdirAll(c.p.dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
