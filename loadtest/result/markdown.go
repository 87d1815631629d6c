package result

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/headroom-dev/headroom/internal/format"
)

// Markdown renders res as a capacity report: the verdict and the exact
// command above a table with one row per step, then the figures per kind,
// every violation, and the baseline comparison.
func (res *Result) Markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	unit := "Arrivals/s"
	if res.Model == "users" {
		unit = "Users"
	}
	p("# %s\n\n", res.Scenario)
	p("**%s** — capacity **%s**", res.Verdict, res.CapacityText())
	if res.FirstFailure > 0 {
		p("; first failure at %s", format.Level(res.FirstFailure))
	}
	if res.Partial {
		p(" (partial: interrupted)")
	}
	p(".")
	if c := strings.TrimSuffix(res.Conclusion, "."); c != "" {
		p(" %s.", strings.ToUpper(c[:1])+c[1:])
	}
	p("\n\n```sh\n%s\n```\n\n", res.Provenance.Command)
	dirty := ""
	if res.Provenance.Dirty {
		dirty = " (dirty)"
	}
	p("Commit `%s`%s · %s · %v · seed %d\n\n", format.Commit(res.Provenance.Commit), dirty,
		res.Start.UTC().Format("2006-01-02 15:04 UTC"), res.End.Sub(res.Start).Round(time.Second), res.Seed)
	e := res.Environment
	p("Measured on %s, %d cores, %s (kernel %s), %s RAM", e.CPUModel, e.Cores, e.OS, e.Kernel, units.BytesSize(float64(e.Memory)))
	switch t := e.System; {
	case t.ShapeUnknown():
		p("; target: the system deployed at %s, its shape unknown (its limits, replicas and other parts are its own)", t.Deployed)
	case t.Backend != "":
		p("; target pinned to %s on the %s backend", format.Limits(t.CPUs, t.Memory), t.Backend)
	}
	p(".\n\n")
	if ran := ranLine(e.System.Components); ran != "" {
		p("Ran %s.\n\n", ran)
	}
	for _, c := range e.System.Components {
		if len(c.Settings) > 0 {
			p("%s settings: %s.\n\n", c.Name, settingsLine(c.Settings))
		}
	}
	p("%s", shardLines(res))

	primary := res.PrimaryKind()
	comps := res.Components()
	p("| %s | Requests/s | Median | 95%% | 99%% | Errors |", unit)
	for _, c := range comps {
		p(" %s CPU / memory |", c)
	}
	p(" Result |\n|---:|---:|---:|---:|---:|---:|")
	for range comps {
		p("---|")
	}
	p("---|\n")
	for _, s := range res.Steps {
		k := s.Kind(primary)
		var lat Latencies
		if k != nil {
			lat = k.Latency
		}
		var total, bad int64
		for _, kr := range s.Kinds {
			if kr.Observed {
				continue // fan-out delays, held streams: not requests
			}
			total += kr.Total()
			bad += kr.Total() - kr.Outcomes[OK]
		}
		errs := "0%"
		if total > 0 {
			errs = format.Pct(float64(bad) / float64(total))
		}
		p("| %s | %.1f | %s | %s | %s | %s |", s.LevelName(), s.Achieved, format.Latency(lat.P50), format.Latency(lat.P95), format.Latency(lat.P99), errs)
		for _, c := range comps {
			p(" %s |", resourceCell(s, c))
		}
		p(" %s |\n", stepOutcome(s))
	}
	if primary != "" {
		p("\nLatency columns are of `%s`, measured from the intended send time; errors are every outcome but ok, over the request kinds.\n", primary)
	}
	stepDetails(p, res.Steps)

	p("\n## Per kind\n\n| Step | Kind | Requests | OK/s | Median | 95%% | 99%% | 99.9%% | Max | Outcomes |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, s := range res.Steps {
		for _, k := range s.Kinds {
			if k.Total() == 0 {
				continue
			}
			okps := 0.0
			if secs := s.Seconds(); secs > 0 {
				okps = float64(k.Outcomes[OK]) / secs
			}
			p("| %d | %s | %d | %.1f | %s | %s | %s | %s | %s | %s |\n", s.Index+1, k.Kind, k.Total(), okps,
				format.Latency(k.Latency.P50), format.Latency(k.Latency.P95), format.Latency(k.Latency.P99), format.Latency(k.Latency.P999), format.Latency(k.Latency.Max), formatOutcomes(k))
		}
	}
	queriesSection(p, res.Steps)
	growthSection(p, res.Steps)
	faultsSection(p, res.Steps)
	if res.Plan.Type == "knee" {
		res.kneeSection(p, unit, primary, comps)
	} else if res.Projection != nil {
		p("\n## Projection\n%s", projectionLines(res.Projection))
	}
	if len(res.Findings) > 0 {
		p("\n## Findings\n\n")
		for _, f := range res.Findings {
			p("- %s\n", f)
		}
	}
	if err := res.Err(); err != nil {
		p("\n## Verdict\n\n")
		for _, line := range strings.Split(err.Error(), "\n") {
			if strings.TrimSpace(line) == "" || strings.HasPrefix(line, " ") {
				continue // a component's log lines, shown whole above
			}
			p("- %s\n", line)
		}
	}
	if c := res.Baseline; c != nil {
		p("\n## Baseline\n\n")
		lines := c.Lines()
		p("%s\n", lines[0])
		if len(lines) > 1 {
			p("\n")
		}
		for _, l := range lines[1:] {
			p("- %s\n", l)
		}
	}
	return b.String()
}

// kneeSection is a knee search's table, one row per level probed in level
// order as a capacity report publishes it, and what set the ceiling.
func (res *Result) kneeSection(p func(string, ...any), unit, primary string, comps []string) {
	p("\n## Knee\n\n| %s | Result |", unit)
	for _, c := range comps {
		p(" %s CPU / memory |", c)
	}
	p("\n|---:|---|")
	for range comps {
		p("---|")
	}
	p("\n")
	steps := slices.Clone(res.Steps)
	slices.SortStableFunc(steps, func(a, b *StepResult) int { return cmp.Compare(a.Step.Level, b.Step.Level) })
	for _, s := range steps {
		level, out := s.LevelName(), stepOutcome(s)
		if s.Verdict == Pass {
			if k := s.Kind(primary); k != nil {
				out = fmt.Sprintf("pass — %s p95 %s", primary, format.Latency(k.Latency.P95))
			}
		}
		if s.Step.Level == res.Capacity && s.Verdict == Pass && !s.Idle() {
			level, out = "**"+level+"**", "**"+out+"**"
		}
		p("| %s | %s |", level, out)
		for _, c := range comps {
			p(" %s |", resourceCell(s, c))
		}
		p("\n")
	}
	p("\n%s\n", res.Ceiling())
	p("%s", projectionLines(res.Projection))
}

// Ceiling says what set a knee search's (or a ladder's) capacity: the
// resources near their limit at the lowest failing level, else the check
// it broke; or that the capacity is only a lower bound — no breach up to
// the plan's top, or the harness reached its limit first.
func (res *Result) Ceiling() string {
	lvl := format.Level(res.Capacity)
	for _, s := range res.Steps {
		if s.Verdict == Invalid && res.Capacity == 0 {
			return fmt.Sprintf("No capacity found: the generator or the harness reached its limit first at %s (%s).",
				format.Level(s.Step.Level), format.FirstOr(s.InvalidReasons(), "invalid"))
		}
		if s.Verdict == Invalid {
			return fmt.Sprintf("Capacity is a lower bound, ≥ %s: the generator or the harness reached its limit first at %s (%s).",
				lvl, format.Level(s.Step.Level), format.FirstOr(s.InvalidReasons(), "invalid"))
		}
	}
	if res.FirstFailure == 0 {
		if res.Capacity == 0 {
			return "No level passed or failed."
		}
		return fmt.Sprintf("Capacity is a lower bound, ≥ %s: no breach up to the highest level probed.", lvl)
	}
	for _, s := range res.Steps {
		if s.Step.Level != res.FirstFailure || s.Verdict != Fail {
			continue
		}
		if s.Down {
			return fmt.Sprintf("The target gave out: at %s, %s.", format.Level(s.Step.Level), firstLine(format.FirstOr(s.Violations, "a component stopped")))
		}
		if len(s.Saturated) > 0 {
			return fmt.Sprintf("The ceiling is the target's resources: at %s, %s.", format.Level(s.Step.Level), strings.Join(s.Saturated, "; "))
		}
		return fmt.Sprintf("The ceiling is the SLO, with no resource near its limit: at %s, %s.", format.Level(s.Step.Level), firstLine(format.FirstOr(s.Violations, "a check failed")))
	}
	return ""
}

// PrimaryKind returns the kind of the report's latency columns: the
// Headline when the scenario chose one (AllRequests among them), else the
// request kind with the most requests over every step. Observed kinds
// (fan-out delays, stream events) are samples, not requests, and never
// primary. Without a step (a result written before its first step ended),
// the timeline decides.
func (res *Result) PrimaryKind() string {
	if res.Headline != "" {
		return res.Headline
	}
	best, n := "", int64(-1)
	for _, name := range res.Kinds() {
		var total int64
		observed := false
		for _, s := range res.Steps {
			if k := s.Kind(name); k != nil {
				observed = observed || k.Observed
				total += k.Total()
			}
		}
		if !observed && total > n {
			best, n = name, total
		}
	}
	if best == "" && res.Timeline != nil {
		for _, ks := range res.Timeline.Kinds {
			if ks.Observed {
				continue
			}
			var total int64
			for _, c := range ks.Count {
				total += c
			}
			if total > n {
				best, n = ks.Kind, total
			}
		}
	}
	return best
}

// components lists the sampled components other than the generator, in
// order of appearance, then the generator.
// Components returns the sampled components other than the generator, in
// order of appearance, then the generator: the columns of a report's step
// table. The host's own series (its busy and stolen cores, see
// SelfCheck.MaxHostOther) are no component.
func (res *Result) Components() []string {
	var out []string
	gen := false
	replicas := res.replicated()
	for _, s := range res.Steps {
		for _, r := range s.Resources {
			if r.Component == "generator" {
				gen = true
				continue
			}
			if r.Component == "host" {
				continue
			}
			name := r.Component
			if base, ok := replicas[name]; ok {
				name = base // one column for a service's replicas
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	if gen {
		out = append(out, "generator")
	}
	return out
}

// replicated maps each replica's series name ("relay-2") to its service's
// ("relay"), for the services the environment records as replicated.
func (res *Result) replicated() map[string]string {
	out := map[string]string{}
	for _, c := range res.Environment.System.Components {
		for i := 1; i <= c.Replicas && c.Replicas > 1; i++ {
			out[c.Name+"-"+strconv.Itoa(i)] = c.Name
		}
	}
	return out
}

// resourceCell is ResourceCell, for the tables of this package.
func resourceCell(s *StepResult, component string) string { return s.ResourceCell(component) }

func stepOutcome(s *StepResult) string {
	switch {
	case len(s.Violations) > 0 && s.Verdict == Fail:
		return "breach — " + cell(s.Violations[0])
	case s.Verdict == Invalid:
		return "invalid — " + cell(format.FirstOr(s.InvalidReasons(), ""))
	}
	return string(s.Verdict)
}

// cell is text fit for a table cell: its first line, pipes turned to
// slashes. A longer text (a component's last log lines) is shown whole
// below the table (stepDetails).
func cell(text string) string {
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimSpace(rest) != "" {
		first += " (its log below)"
	}
	return strings.ReplaceAll(first, "|", "/")
}

// stepDetails writes, below the steps' table, each violation too long
// for its cell: its first line, then the rest as a code block.
func stepDetails(p func(string, ...any), steps []*StepResult) {
	for i := range steps {
		for _, v := range steps[i].Violations {
			first, rest, _ := strings.Cut(v, "\n")
			if strings.TrimSpace(rest) == "" {
				continue
			}
			p("\n**At %s**: %s\n\n~~~\n%s\n~~~\n", format.Level(steps[i].Step.Level), first,
				strings.ReplaceAll(strings.TrimRight(rest, "\n"), "~~~", "~ ~ ~"))
		}
	}
}

func formatOutcomes(k *KindResult) string {
	var parts []string
	for o := Outcome(0); int(o) < NumOutcomes; o++ {
		if n := k.Outcomes[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	return strings.Join(parts, ", ")
}

// shardLines says, for a report, which shard a result is or which shards
// a merged result was generated by; "" for a run of one process.
func shardLines(res *Result) string {
	switch {
	case len(res.Shards) > 0:
		var parts []string
		for _, s := range res.Shards {
			where := "no result"
			if s.Host != "" || s.Name != "" {
				where = fmt.Sprintf("on %s (host %s), %d steps", s.Name, s.Host, s.Steps)
				if s.Partial {
					where += ", stopped early"
				}
			}
			parts = append(parts, fmt.Sprintf("%d %s", s.Index, where))
		}
		return fmt.Sprintf("Generated by %d shards starting at %s: %s.\n\n", len(res.Shards), res.Shards[0].StartAt.UTC().Format(time.RFC3339), strings.Join(parts, "; "))
	case res.Shard != nil:
		return fmt.Sprintf("%s of a sharded run starting at %s: this result holds its slice of the load; merge every shard's (headroom merge) for the run's.\n\n",
			strings.ToUpper(res.Shard.String()[:1])+res.Shard.String()[1:], res.Shard.StartAt.UTC().Format(time.RFC3339))
	}
	return ""
}

// ranLine names what ran: every component with its version, a Go
// program's build as its module and version control know it.
func ranLine(comps []Component) string {
	var out []string
	for _, c := range comps {
		switch {
		case c.Build != nil:
			out = append(out, fmt.Sprintf("%s (%s)", c.Name, c.Build))
		case c.Version != "":
			out = append(out, c.Name+" "+c.Version)
		default:
			out = append(out, c.Name)
		}
	}
	return strings.Join(out, " · ")
}

// settingsLine is a component's settings in name order: "fsync off ·
// max_connections 200 · shared_buffers 128MB".
func settingsLine(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]string, len(keys))
	for i, k := range keys {
		v := m[k]
		if v == "" {
			v = `""`
		}
		out[i] = k + " " + v
	}
	return strings.Join(out, " · ")
}

// firstLine is text up to its first line break.
func firstLine(text string) string {
	first, _, _ := strings.Cut(text, "\n")
	return first
}

// queriesSection is what the database ran in each hold (StepResult.Queries)
// and the busiest statements of the highest step that counted them: the
// counting of queries per request that finds an N+1 or a missing index.
func queriesSection(p func(string, ...any), steps []*StepResult) {
	var last *StepResult
	for _, s := range steps {
		if s.Queries != nil {
			last = s
		}
	}
	if last == nil {
		return
	}
	p("\n## Queries\n\n| Step | Statements/s | Per OK request | Database time/s | Distinct |\n|---:|---:|---:|---:|---:|\n")
	for _, s := range steps {
		q, secs := s.Queries, s.Seconds()
		if q == nil || secs <= 0 {
			continue
		}
		p("| %d | %.1f | %.2f | %.0f ms | %d |\n", s.Index+1, float64(q.Calls)/secs, q.PerOK, q.TotalMS/secs, q.Statements)
	}
	q, secs := last.Queries, last.Seconds()
	if len(q.Top) == 0 || secs <= 0 {
		return
	}
	p("\nThe busiest statements of step %d by database time (the server's execution time, without round trips); per OK request counts every request kind:\n\n", last.Index+1)
	p("| Statement | Calls/s | Per OK request | Mean | Database time/s | Rows/call |\n|---|---:|---:|---:|---:|---:|\n")
	for _, st := range q.Top {
		per := "–"
		if q.OK > 0 {
			per = fmt.Sprintf("%.2f", float64(st.Calls)/float64(q.OK))
		}
		p("| `%s` | %.1f | %s | %.2f ms | %.0f ms | %.1f |\n", statementCell(st.Query), float64(st.Calls)/secs, per, st.MeanMS(),
			st.TotalMS/secs, float64(st.Rows)/float64(st.Calls))
	}
}

// statementCell is a statement's text for a table cell: one line, at most
// 120 characters, without backquotes or pipes.
func statementCell(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	q = strings.NewReplacer("`", "'", "|", "¦").Replace(q)
	if r := []rune(q); len(r) > 120 {
		q = string(r[:119]) + "…"
	}
	return q
}

// growthSection is a soak's fit of every memory and goroutines series
// (StepResult.Growth), one row per series.
func growthSection(p func(string, ...any), steps []*StepResult) {
	for _, s := range steps {
		if !s.Step.Soak || len(s.Growth) == 0 {
			continue
		}
		g0 := s.Growth[0]
		p("\n## Growth over the soak\n\nStep %d held level %s for %v; each series fitted over the hold's last %.0f s (the first third is warm-up) in %d window means. A leak is sure (the interval's low end above zero), material (at least %.0f%% and 1 MiB or 25 goroutines over the fit) and not flattening; judged are the target's and the services' (a database's memory grows with its data and cache).\n\n",
			s.Index+1, s.LevelName(), s.Step.Hold, g0.To-g0.From, g0.Windows, GrowthShare*100)
		p("| Series | From | To | Per hour (95%% interval) | After 8 h | Verdict |\n|---|---:|---:|---|---|---|\n")
		for _, g := range s.Growth {
			verdict := "steady"
			switch {
			case g.Leak && g.Judged:
				verdict = "**leak**"
			case g.Leak:
				verdict = "grows (not judged)"
			case g.PerHourLow > 0 && !g.Unbounded:
				verdict = "grew, not a leak"
			}
			day := "–"
			if g.PerHourLow > 0 && !g.Unbounded {
				day = g.quantity(g.End + 8*g.PerHour)
				if g.Limit > 0 && g.End < g.Limit {
					day += fmt.Sprintf(" (limit %s in %.1f h)", g.quantity(g.Limit), (g.Limit-g.End)/g.PerHour)
				}
			}
			p("| %s | %s | %s | %s | %s | %s |\n", g.Name(), g.quantity(g.Start), g.quantity(g.End), g.Rate(), day, verdict)
		}
	}
}
