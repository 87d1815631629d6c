package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docker/go-units"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// HTMLPath returns where the HTML report of the result at jsonPath goes:
// beside it, <base>.html.
func HTMLPath(jsonPath string) string {
	return strings.TrimSuffix(jsonPath, ".json") + ".html"
}

// WriteHTML writes the HTML report of res beside its JSON file at
// jsonPath, as <base>.html, atomically (a temporary file renamed). Pass it
// to loadtest.RegisterWriter in a TestMain for every loadtest.Test of the
// binary to leave its HTML report beside its JSON.
func WriteHTML(res *loadtest.Result, jsonPath string) error {
	b, err := HTML(res, jsonPath)
	if err != nil {
		return err
	}
	return files.WriteAtomic(HTMLPath(jsonPath), b)
}

// HTML renders res as one self-contained HTML page: the verdict and the
// command that repeats the run at the top, the capacity table, every plot
// (inline SVG), the figures per kind and step, the faults injected
// (when each was seen and recovered from), every check with what each
// step measured, the generator's self-check, findings, the baseline
// comparison and the environment, with relative links to the components'
// logs (<base>.logs/ beside jsonPath, when present) and to the profiles.
// The page references nothing outside itself: no network, no external
// script, font or image. jsonPath may be empty (no links then). A result
// without a timeline (an older file) or an incomplete one renders too,
// with a note for what it cannot show.
func HTML(res *loadtest.Result, jsonPath string) ([]byte, error) {
	if res == nil {
		return nil, errors.New("report: no result")
	}
	v := build(res, jsonPath)
	var buf bytes.Buffer
	if err := pageTmpl.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return buf.Bytes(), nil
}

type figureView struct {
	Name, Title string
	SVG         template.HTML
	Err         string
}

type cell struct {
	Text  string
	Class string
	Title string
}

type stepRow struct {
	Index    int
	Level    string
	Offered  string
	Achieved string
	OK       string
	P50      string
	P95      string
	P99      string
	Errors   string
	Res      []string
	Verdict  string
	Class    string
	Outcome  string
	Profiles []link
}

type kindRow struct {
	Step                                int
	Level                               string
	Kind                                string
	Observed                            bool
	Requests                            int64
	OKps                                string
	P50, P90, P95, P99, P999, Max, Mean string
	Outcomes                            string
	Errors                              []string
}

// queryRow is one step's statements (StepResult.Queries).
type queryRow struct {
	Step                          int
	Level                         string
	PerS, PerOK, DBTime, Distinct string
}

// statementRow is one of the busiest statements of a step.
type statementRow struct {
	Query                           string
	PerS, PerOK, Mean, DBTime, Rows string
}

// faultRow is one fault injected in a step's hold (StepResult.Faults),
// with the cells of the Markdown report's table; Class marks a fault the
// system did not recover from (fail) or that was not applied as planned
// (invalid, as its step is).
type faultRow struct {
	Step                                   int
	Name, At, For, Seen, Recovered, Failed string
	Class                                  string
}

type selfRow struct {
	Step                                       int
	Level                                      string
	Lag, CPU, Dropped, Unfinished, Queued, Mem string
	Files                                      string
	Reasons                                    []string
	Saturated                                  []string
}

type link struct{ Text, Href string }

type kv struct{ K, V string }

type checkRow struct {
	Check string
	Cells []cell
}

type view struct {
	Res         *loadtest.Result
	Title       string
	Verdict     string
	VClass      string
	Headline    string
	Conclusion  string
	Command     string
	Meta        []kv
	Errs        []string
	Unit        string
	Primary     string
	Components  []string
	Steps       []stepRow
	Ceiling     string
	Figures     []figureView
	Notes       []string
	Kinds       []kindRow
	Queries     []queryRow
	TopStep     int
	Statements  []statementRow
	Faults      []faultRow
	FaultLegend string
	StepHeads   []string
	Checks      []checkRow
	Self        []selfRow
	Findings    []string
	Baseline    []string
	BaseTitle   string
	Env         []kv
	Components2 []result.Component
	Params      []kv
	Knobs       []kv
	Args        string
	Logs        []link
	LogDir      string
	Generated   string
}

func build(res *loadtest.Result, jsonPath string) *view {
	v := &view{Res: res, Title: res.Scenario, Verdict: string(res.Verdict), VClass: string(res.Verdict),
		Unit: levelUnit(res), Primary: res.PrimaryKind(), Command: res.Provenance.Command,
		Generated: time.Now().UTC().Format("2006-01-02 15:04:05 UTC")}
	if v.Title == "" {
		v.Title = "(unnamed scenario)"
	}
	if v.Verdict == "" {
		v.Verdict, v.VClass = "unknown", "incomplete"
	}
	h := "capacity " + res.CapacityText()
	if res.FirstFailure > 0 {
		h += fmt.Sprintf("; first failure at %s", format.Level(res.FirstFailure))
	}
	if res.Partial {
		h += " (partial: the run was interrupted or has not finished)"
	}
	v.Headline = h
	v.Conclusion = res.Conclusion
	if res.Plan.Type == "knee" || res.Verdict != result.Pass {
		v.Ceiling = res.Ceiling()
	}
	dirty := ""
	if res.Provenance.Dirty {
		dirty = " (dirty)"
	}
	v.Meta = []kv{
		{"Commit", format.Commit(res.Provenance.Commit) + dirty},
		{"Started", res.Start.UTC().Format("2006-01-02 15:04:05 UTC")},
		{"Duration", res.End.Sub(res.Start).Round(time.Second).String()},
		{"Model", res.Model},
		{"Plan", describePlan(res.Plan)},
		{"Seed", fmt.Sprint(res.Seed)},
	}
	if res.Short {
		v.Meta = append(v.Meta, kv{"Size", "-short"})
	}
	if err := res.Err(); err != nil {
		v.Errs = strings.Split(err.Error(), "\n")
	}

	// Capacity table.
	v.Components = components(res)
	dir := ""
	if jsonPath != "" {
		dir = filepath.Dir(jsonPath)
	}
	for _, s := range res.Steps {
		row := stepRow{Index: s.Index + 1, Level: s.LevelName(), Offered: fmt.Sprintf("%.1f", s.Offered),
			Achieved: fmt.Sprintf("%.1f", s.Achieved), OK: fmt.Sprintf("%.1f", s.Throughput),
			Verdict: string(s.Verdict), Class: string(s.Verdict), Outcome: stepOutcome(s)}
		if k := s.Kind(v.Primary); k != nil {
			row.P50, row.P95, row.P99 = format.Latency(k.Latency.P50), format.Latency(k.Latency.P95), format.Latency(k.Latency.P99)
		} else {
			row.P50, row.P95, row.P99 = "–", "–", "–"
		}
		var total, bad int64
		for _, k := range s.Kinds {
			if k.Observed {
				continue
			}
			total += k.Total()
			bad += k.Total() - k.Outcomes[loadtest.OK]
		}
		row.Errors = "0%"
		if total > 0 {
			row.Errors = format.Pct(float64(bad) / float64(total))
		}
		for _, c := range v.Components {
			row.Res = append(row.Res, resourceCell(s, c))
		}
		for _, p := range s.Profiles {
			row.Profiles = append(row.Profiles, link{Text: p.Component + " " + p.Type, Href: relLink(dir, p.Path)})
		}
		v.Steps = append(v.Steps, row)
		v.StepHeads = append(v.StepHeads, fmt.Sprintf("step %d (%s)", s.Index+1, s.LevelName()))

		for _, k := range s.Kinds {
			if k.Total() == 0 {
				continue
			}
			okps := 0.0
			if secs := s.Seconds(); secs > 0 {
				okps = float64(k.Outcomes[loadtest.OK]) / secs
			}
			v.Kinds = append(v.Kinds, kindRow{Step: s.Index + 1, Level: format.Level(s.Step.Level), Kind: k.Kind, Observed: k.Observed,
				Requests: k.Total(), OKps: fmt.Sprintf("%.1f", okps),
				P50: format.Latency(k.Latency.P50), P90: format.Latency(k.Latency.P90), P95: format.Latency(k.Latency.P95), P99: format.Latency(k.Latency.P99),
				P999: format.Latency(k.Latency.P999), Max: format.Latency(k.Latency.Max), Mean: format.Latency(k.Latency.Mean),
				Outcomes: formatOutcomes(k), Errors: k.Errors})
		}
		if q, secs := s.Queries, s.Seconds(); q != nil && secs > 0 {
			v.Queries = append(v.Queries, queryRow{Step: s.Index + 1, Level: format.Level(s.Step.Level),
				PerS: fmt.Sprintf("%.1f", float64(q.Calls)/secs), PerOK: fmt.Sprintf("%.2f", q.PerOK),
				DBTime: fmt.Sprintf("%.0f ms", q.TotalMS/secs), Distinct: fmt.Sprint(q.Statements)})
			v.TopStep, v.Statements = s.Index+1, nil
			for _, st := range q.Top {
				per := "–"
				if q.OK > 0 {
					per = fmt.Sprintf("%.2f", float64(st.Calls)/float64(q.OK))
				}
				v.Statements = append(v.Statements, statementRow{Query: st.Query, PerS: fmt.Sprintf("%.1f", float64(st.Calls)/secs), PerOK: per,
					Mean: fmt.Sprintf("%.2f ms", st.MeanMS()), DBTime: fmt.Sprintf("%.0f ms", st.TotalMS/secs), Rows: fmt.Sprintf("%.1f", float64(st.Rows)/float64(st.Calls))})
			}
		}
		for _, f := range s.Faults {
			v.Faults = append(v.Faults, newFaultRow(s.Index+1, f))
			if v.FaultLegend == "" {
				v.FaultLegend = result.FaultsLegend(f.Healthy.String())
			}
		}
		sc := s.Self
		sr := selfRow{Step: s.Index + 1, Level: format.Level(s.Step.Level), Lag: format.Latency(sc.ScheduleLagP99),
			CPU: fmt.Sprintf("%.0f%%", sc.CPU*100), Dropped: fmt.Sprint(sc.Dropped), Unfinished: fmt.Sprint(sc.Unfinished),
			Queued: format.Latency(sc.QueuedP99) + " / " + format.Latency(sc.QueuedMax), Reasons: sc.Reasons, Saturated: s.Saturated}
		for _, d := range sc.Doubts {
			sr.Reasons = append(slices.Clip(sr.Reasons), "doubt (voids a breach, not a pass): "+d)
		}
		sr.Mem = "–"
		if sc.Memory > 0 {
			sr.Mem = units.BytesSize(float64(sc.Memory))
			if sc.MemoryLimit > 0 {
				sr.Mem += " of " + units.BytesSize(float64(sc.MemoryLimit))
			}
		}
		sr.Files = "–"
		if sc.Files > 0 {
			sr.Files = fmt.Sprint(sc.Files)
			if sc.FileLimit > 0 {
				sr.Files += fmt.Sprintf(" of %d", sc.FileLimit)
			}
		}
		v.Self = append(v.Self, sr)
	}

	// Checks against steps.
	for _, c := range res.Checks {
		row := checkRow{Check: c}
		for _, s := range res.Steps {
			row.Cells = append(row.Cells, checkCell(c, s))
		}
		v.Checks = append(v.Checks, row)
	}

	// Figures.
	figs, notes := figures(res, "")
	v.Notes = notes
	for _, f := range figs {
		fv := figureView{Name: f.Name, Title: f.Plot.Title.Text}
		b, err := f.inlineSVG()
		if err != nil {
			fv.Err = err.Error()
		} else {
			fv.SVG = template.HTML(b) // drawn by gonum from escaped text
		}
		v.Figures = append(v.Figures, fv)
	}

	for _, f := range res.Findings {
		v.Findings = append(v.Findings, f.String())
	}
	if c := res.Baseline; c != nil {
		v.BaseTitle = c.Path
		v.Baseline = c.Lines()
	}

	e := res.Environment
	v.Env = []kv{
		{"CPU", e.CPUModel}, {"Cores", fmt.Sprint(e.Cores)}, {"GOMAXPROCS", fmt.Sprint(e.GOMAXPROCS)},
		{"OS", e.OS}, {"Kernel", e.Kernel}, {"Memory", units.BytesSize(float64(e.Memory))}, {"Go", e.Go},
		{"Host", e.Host}, {"Backend", e.System.Backend}, {"Engine", e.System.Engine},
		{"Target limits", targetLimits(e.System)}, {"Class", e.Class},
	}
	v.Components2 = e.System.Components
	for _, k := range slices.Sorted(maps.Keys(res.Params)) {
		v.Params = append(v.Params, kv{k, res.Params[k]})
	}
	for _, k := range slices.Sorted(maps.Keys(res.Provenance.Env)) {
		v.Knobs = append(v.Knobs, kv{k, res.Provenance.Env[k]})
	}
	v.Args = strings.Join(res.Provenance.Args, " ")

	if jsonPath != "" {
		logDir := strings.TrimSuffix(jsonPath, ".json") + ".logs"
		if ents, err := os.ReadDir(logDir); err == nil {
			v.LogDir = filepath.Base(logDir)
			for _, e := range ents {
				if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
					continue
				}
				v.Logs = append(v.Logs, link{Text: e.Name(), Href: relLink(dir, filepath.Join(logDir, e.Name()))})
			}
		}
	}
	return v
}

// relLink makes a relative link from dir to p (p relative to dir, or
// absolute), with forward slashes and every segment escaped.
func relLink(dir, p string) string {
	if filepath.IsAbs(p) && dir != "" {
		if r, err := filepath.Rel(dir, p); err == nil {
			p = r
		}
	}
	parts := strings.Split(filepath.ToSlash(p), "/")
	for i, s := range parts {
		parts[i] = pathEscape(s)
	}
	return strings.Join(parts, "/")
}

// pathEscape escapes a path segment for a relative URL: what url.PathEscape
// does, and ':' too, so that "users=20:x" is never read as a scheme.
func pathEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("-._~=,+@", c) >= 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// checkCell says what step s made of the check c: its violation (with the
// measured value), why it could not be judged, or that it held — with the
// value measured when the check bounds a latency.
func checkCell(c string, s *loadtest.StepResult) cell {
	prefix := c + ":"
	for _, u := range s.Unjudged {
		if strings.HasPrefix(u, prefix) || u == c {
			return cell{Text: "unjudged: " + strings.TrimSpace(strings.TrimPrefix(u, prefix)), Class: "invalid"}
		}
	}
	for _, vio := range s.Violations {
		if strings.HasPrefix(vio, prefix) || vio == c {
			return cell{Text: "violated: " + strings.TrimSpace(strings.TrimPrefix(vio, prefix)), Class: "fail"}
		}
	}
	if s.Verdict == result.Incomplete {
		return cell{Text: "not judged (incomplete step)", Class: "incomplete"}
	}
	text := "held"
	if m := latencyCheck.FindStringSubmatch(c); m != nil {
		var p float64
		if _, err := fmt.Sscan(m[1], &p); err == nil {
			if k := s.Kind(m[2]); k != nil && k.Answered() > 0 {
				text += ": measured " + k.Percentile(p).String()
			}
		}
	}
	return cell{Text: text, Class: "pass"}
}

// newFaultRow is the row of fault f of step (counted from 1): what the
// Markdown report's table says of it, from f's own descriptions.
func newFaultRow(step int, f result.FaultResult) faultRow {
	r := faultRow{Step: step, Name: f.Name, At: f.At.String(), For: "—", Seen: f.Seen(), Recovered: f.Recovery(), Failed: f.FailedText()}
	if f.For > 0 {
		r.For = f.For.String()
	}
	switch {
	case f.Error != "":
		r.Seen, r.Recovered, r.Class = f.Error, "—", "invalid"
	case f.Applied() && f.Unrecovered:
		r.Class = "fail"
	}
	return r
}

func describePlan(p result.PlanInfo) string {
	switch {
	case p.Type == "ladder":
		var lv []string
		for _, s := range p.Steps {
			lv = append(lv, format.Level(s.Level))
		}
		hold := ""
		if len(p.Steps) > 0 {
			hold = fmt.Sprintf(", ramp %v, hold %v", p.Steps[0].Ramp, p.Steps[0].Hold)
		}
		return fmt.Sprintf("ladder %s%s", strings.Join(lv, ", "), hold)
	case p.Type == "knee" && p.Knee != nil:
		k := p.Knee
		return fmt.Sprintf("knee search from %s by ×%g up to %s, ramp %v, hold %v", format.Level(k.Start), k.Factor, format.Level(k.Max), k.Ramp, k.Hold)
	}
	return p.Type
}

// components lists the sampled components other than the generator, in
// order of appearance, then the generator.
func components(res *loadtest.Result) []string { return res.Components() }

func resourceCell(s *loadtest.StepResult, component string) string { return s.ResourceCell(component) }

func stepOutcome(s *loadtest.StepResult) string {
	switch {
	case len(s.Violations) > 0 && s.Verdict == result.Fail:
		return strings.Join(s.Violations, "; ")
	case s.Verdict == result.Invalid:
		return strings.Join(s.InvalidReasons(), "; ")
	}
	return ""
}

func formatOutcomes(k *result.KindResult) string {
	var parts []string
	for o := loadtest.Outcome(0); int(o) < result.NumOutcomes; o++ {
		if n := k.Outcomes[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	return strings.Join(parts, ", ")
}

// targetLimits is the environment table's "Target limits": the pinned
// limits, or a deployment's unknown shape.
func targetLimits(t result.System) string {
	if t.ShapeUnknown() {
		return "unknown: the system deployed at " + t.Deployed
	}
	return format.Limits(t.CPUs, t.Memory)
}
