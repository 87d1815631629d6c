package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/headroom-dev/headroom/internal/files"
	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/ab"
	"github.com/headroom-dev/headroom/loadtest/history"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// IndexFile is the name of the index page Index writes.
const IndexFile = "index.html"

// Entry is one result file found under a directory.
type Entry struct {
	// Path is the result's JSON file, relative to the directory searched.
	Path string
	// Result is the result read from it.
	Result *loadtest.Result
}

// FindResults returns every result file below dir (recursively), in path
// order: JSON files that read as a loadtest.Result with a scenario and a
// plan. Hidden files and directories, component log directories
// (*.logs), A/B reports (ab.json) and files of other formats are skipped.
func FindResults(dir string) ([]Entry, error) {
	var out []Entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".logs")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".") || name == "ab.json" {
			return nil
		}
		res, err := result.ReadResult(p)
		if err != nil || res.Scenario == "" || res.Plan.Type == "" || res.Schema == 0 {
			return nil // not a result (a study, a baseline, another file)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			rel = p
		}
		out = append(out, Entry{Path: rel, Result: res})
		return nil
	})
	return out, err
}

// Index writes index.html in dir: every result found below it grouped by
// scenario (verdict, capacity, commit, date, a link to each HTML report),
// the capacity history of each scenario when the directory has one
// (history.jsonl in dir or its parent, as testdata/results has
// testdata/history.jsonl), and every A/B comparison found below it
// (ab.json). It returns the page's path.
func Index(dir string) (string, error) {
	b, err := IndexHTML(dir)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, IndexFile)
	return path, files.WriteAtomic(path, b)
}

type indexRow struct {
	Href, JSON   string
	HasHTML      bool
	Verdict      string
	Capacity     string
	FirstFailure string
	Commit       string
	Date         string
	Note         string
	Path         string
	start        time.Time
}

type indexGroup struct {
	Scenario string
	Rows     []indexRow
}

type historyRow struct {
	Label, Commit, Capacity, Change, Verdict, What, Break string
}

type historyGroup struct {
	Scenario string
	Rows     []historyRow
	SVG      template.HTML
	// Changes are the steps and drifts found in the scenario's figures
	// (history.Changes), each with a plot of the figure's nights.
	Changes []historyChange
}

type historyChange struct {
	Text  string
	Worse bool
	SVG   template.HTML
}

type abRow struct {
	Dir, Href, Scenario, Verdict, Reason, Trials string
	Rejected                                     []string
}

type indexView struct {
	Dir         string
	Generated   string
	Count       int
	Groups      []indexGroup
	HistoryFile string
	History     []historyGroup
	HistoryErr  string
	AB          []abRow
	Tables      []tableView
}

// tableView is a side-by-side table (Table) found below the directory.
type tableView struct {
	Table
	Path, MD, CSV string
}

// IndexHTML renders the index page of dir; see [Index].
func IndexHTML(dir string) ([]byte, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("report: %s is not a directory", dir)
	}
	entries, err := FindResults(dir)
	if err != nil {
		return nil, err
	}
	v := indexView{Dir: dir, Generated: time.Now().UTC().Format("2006-01-02 15:04:05 UTC"), Count: len(entries)}
	groups := map[string]*indexGroup{}
	for _, e := range entries {
		res := e.Result
		htmlRel := strings.TrimSuffix(e.Path, ".json") + ".html"
		_, herr := os.Stat(filepath.Join(dir, htmlRel))
		row := indexRow{Path: filepath.ToSlash(e.Path), JSON: relLink("", e.Path), Href: relLink("", e.Path), HasHTML: herr == nil,
			Verdict: string(res.Verdict), Capacity: res.CapacityText(),
			Commit: format.Commit(res.Provenance.Commit), Date: res.Start.UTC().Format("2006-01-02 15:04"), start: res.Start}
		if row.HasHTML {
			row.Href = relLink("", htmlRel)
		}
		if res.FirstFailure > 0 {
			row.FirstFailure = format.Level(res.FirstFailure)
		}
		if res.Provenance.Dirty {
			row.Commit += " (dirty)"
		}
		var notes []string
		if res.Partial {
			notes = append(notes, "partial")
		}
		if res.Short {
			notes = append(notes, "-short")
		}
		row.Note = strings.Join(notes, ", ")
		g := groups[res.Scenario]
		if g == nil {
			g = &indexGroup{Scenario: res.Scenario}
			groups[res.Scenario] = g
		}
		g.Rows = append(g.Rows, row)
	}
	for _, g := range groups {
		slices.SortStableFunc(g.Rows, func(a, b indexRow) int { return b.start.Compare(a.start) })
		v.Groups = append(v.Groups, *g)
	}
	slices.SortFunc(v.Groups, func(a, b indexGroup) int { return cmp.Compare(a.Scenario, b.Scenario) })

	// The capacity history, where the directory has one.
	for _, cand := range []string{filepath.Join(dir, "history.jsonl"), filepath.Join(filepath.Dir(filepath.Clean(dir)), "history.jsonl")} {
		rows, err := history.Read(cand)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		v.HistoryFile = cand
		if err != nil {
			v.HistoryErr = err.Error()
			break
		}
		v.History = historyGroups(rows)
		break
	}

	// A/B comparisons.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "ab.json" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		var reps []*ab.Report
		if json.Unmarshal(b, &reps) != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(p))
		href := relLink("", filepath.Join(rel, "ab.md"))
		if _, err := os.Stat(filepath.Join(filepath.Dir(p), "ab.md")); err != nil {
			href = relLink("", filepath.Join(rel, "ab.json"))
		}
		for _, r := range reps {
			v.AB = append(v.AB, abRow{Dir: filepath.ToSlash(rel), Href: href, Scenario: r.Scenario, Verdict: string(r.Verdict),
				Reason: r.Reason, Trials: fmt.Sprintf("%d A, %d B", r.Trials[ab.A], r.Trials[ab.B]), Rejected: r.Rejected})
		}
		return nil
	})

	// Side-by-side tables.
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(d.Name(), TableSuffix) {
			return nil
		}
		t, err := ReadTable(p)
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, strings.TrimSuffix(p, TableSuffix))
		v.Tables = append(v.Tables, tableView{Table: t, Path: filepath.ToSlash(rel),
			MD: relLink("", rel+".md"), CSV: relLink("", rel+".csv")})
		return nil
	})

	var buf strings.Builder
	if err := indexTmpl.Execute(&buf, v); err != nil {
		return nil, fmt.Errorf("report: index: %w", err)
	}
	return []byte(buf.String()), nil
}

// historyGroups renders the history rows scenario by scenario, newest
// first, with a plot of the capacity across commits.
func historyGroups(rows []history.Row) []historyGroup {
	ordered := history.Order(rows, "")
	var out []historyGroup
	index := map[string]int{}
	for _, r := range ordered {
		i, ok := index[r.Scenario]
		if !ok {
			i = len(out)
			index[r.Scenario] = i
			out = append(out, historyGroup{Scenario: r.Scenario})
		}
		capText := format.Level(r.Capacity)
		if r.LowerBound {
			capText = "≥ " + capText
		}
		if r.Unit != "" {
			capText += " " + r.Unit
		}
		change := ""
		if r.Previous != nil && r.Previous.Capacity > 0 {
			change = fmt.Sprintf("%+.1f%%", (r.Capacity/r.Previous.Capacity-1)*100)
		}
		what := r.Note
		if what == "" {
			what = r.Subject
		}
		commit := format.Commit(r.Commit)
		if r.Dirty {
			commit += " (dirty)"
		}
		out[i].Rows = append(out[i].Rows, historyRow{Label: r.Label, Commit: commit, Capacity: capText, Change: change,
			Verdict: string(r.Verdict), What: what, Break: r.Break})
	}
	found, _ := history.Changes(rows, "", history.ChangeOptions{}) // a series it cannot search is left unsearched
	for i := range out {
		if svg := historyPlot(ordered, out[i].Scenario); svg != nil {
			out[i].SVG = template.HTML(svg)
		}
		for _, f := range found {
			if f.Scenario != out[i].Scenario {
				continue
			}
			c := historyChange{Text: f.String(), Worse: f.Worse}
			if svg := changePlot(ordered, f); svg != nil {
				c.SVG = template.HTML(svg)
			}
			out[i].Changes = append(out[i].Changes, c)
		}
	}
	return out
}

// changePlot draws the figure of a finding over its scenario's nights,
// oldest first, labelled by commit, with the step marked between its two
// nights or the drift's nights joined by its fitted line; nil when it
// cannot be drawn.
func changePlot(ordered []history.Row, f history.Finding) []byte {
	var xys plotter.XYs
	ticks := plot.ConstantTicks{}
	var from, to float64
	n := 0
	for i := len(ordered) - 1; i >= 0; i-- {
		r := ordered[i]
		if r.Scenario != f.Scenario {
			continue
		}
		v, ok := r.Value(f.Figure)
		if !ok {
			continue
		}
		n++
		xys = append(xys, plotter.XY{X: float64(n), Y: v})
		label := format.Commit(r.Commit)
		if len(label) > 7 {
			label = label[:7]
		}
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: label})
		if r.SameRun(f.Before) {
			from = float64(n)
		}
		if r.SameRun(f.After) {
			to = float64(n)
		}
	}
	if len(xys) < 2 || from == 0 || to == 0 {
		return nil
	}
	unit := f.Unit
	if unit == "" {
		unit = "value"
	}
	p := newPlot(f.Scenario+": "+f.Figure+" across nights", "night (oldest first), labelled by commit", f.Figure+" ("+unit+")")
	leg := newLegend()
	addSeries(p, &leg, f.Figure, xys, colour(0), nil, true)
	if f.Step {
		p.Add(vline{X: (from + to) / 2, Color: colour(3), Dash: []vg.Length{vg.Points(4), vg.Points(3)}, Width: vg.Points(1.5)})
	} else if f.PerNight != 0 {
		// The fitted drift: from its first night's level, ×(1+slope) a night.
		var line plotter.XYs
		start := xys[int(from)-1].Y
		for x := from; x <= to; x++ {
			line = append(line, plotter.XY{X: x, Y: start * math.Pow(1+f.PerNight, x-from)})
		}
		addSeries(p, &leg, fmt.Sprintf("drift %+.1f%%/night", f.PerNight*100), line, colour(3), []vg.Length{vg.Points(4), vg.Points(3)}, false)
	}
	if len(ticks) > 12 {
		for i := range ticks {
			if i%((len(ticks)+11)/12) != 0 {
				ticks[i].Label = ""
			}
		}
	}
	p.X.Tick.Marker = ticks
	padXRange(p)
	fromZero(p)
	p.Y.Max *= 1.08
	fig := &Figure{Name: "change-" + slug(f.Scenario+"-"+f.Figure), Plot: p, Legend: leg, H: defaultH * 0.7}
	b, err := fig.inlineSVG()
	if err != nil {
		return nil
	}
	return b
}

// historyPlot draws a scenario's capacity across its history rows, oldest
// first, labelled by commit; nil with fewer than two rows.
func historyPlot(ordered []history.Row, scenario string) []byte {
	var rows []history.Row
	for _, r := range ordered {
		if r.Scenario == scenario {
			rows = append(rows, r)
		}
	}
	if len(rows) < 2 {
		return nil
	}
	slices.Reverse(rows) // oldest first
	unit := rows[0].Unit
	if unit == "" {
		unit = "level"
	}
	p := newPlot(scenario+": capacity across commits", "run (oldest first), labelled by commit", "capacity ("+unit+")")
	leg := newLegend()
	var xys plotter.XYs
	marks := map[result.Verdict]plotter.XYs{}
	ticks := plot.ConstantTicks{}
	for i, r := range rows {
		xy := plotter.XY{X: float64(i + 1), Y: r.Capacity}
		if i > 0 && !r.Comparable {
			// Rows that do not compare (another plan, environment
			// class, a new baseline) are not joined.
			xys = append(xys, plotter.XY{X: float64(i) + 0.5, Y: math.NaN()})
		}
		xys = append(xys, xy)
		marks[r.Verdict] = append(marks[r.Verdict], xy)
		label := format.Commit(r.Commit)
		if len(label) > 7 {
			label = label[:7]
		}
		ticks = append(ticks, plot.Tick{Value: float64(i + 1), Label: label})
	}
	addSeries(p, &leg, "capacity (joined where comparable)", xys, colour(0), nil, true)
	addVerdicts(p, &leg, marks, "")
	if len(ticks) > 12 {
		for i := range ticks {
			if i%((len(ticks)+11)/12) != 0 {
				ticks[i].Label = ""
			}
		}
	}
	p.X.Tick.Marker = ticks
	padXRange(p)
	fromZero(p)
	p.Y.Max *= 1.08
	f := &Figure{Name: "history-" + slug(scenario), Plot: p, Legend: leg, H: defaultH * 0.8}
	b, err := f.inlineSVG()
	if err != nil {
		return nil
	}
	return b
}

var indexTmpl = template.Must(template.New("index").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Headroom results — {{.Dir}}</title>
<style>{{style}}</style>
<script>{{script}}</script>
</head>
<body data-plots="0" data-results="{{.Count}}">
<main>
<h1>Headroom results</h1>
<p>{{.Count}} result{{if ne .Count 1}}s{{end}} under <code>{{.Dir}}</code>, by scenario, newest first.{{if .Tables}} <a href="#tables">Side by side</a>{{end}}{{if .History}} · <a href="#history">Capacity history</a>{{end}}{{if .AB}} · <a href="#ab">A/B comparisons</a>{{end}}</p>
{{range .Groups}}
<h2>{{.Scenario}}</h2>
<table class="results">
<thead><tr><th>Date</th><th>Verdict</th><th>Capacity</th><th>First failure</th><th>Commit</th><th>Report</th><th>Result</th><th>Note</th></tr></thead>
<tbody>
{{range .Rows}}<tr><td>{{.Date}}</td><td class="{{.Verdict}}"><b>{{.Verdict}}</b></td><td class="num">{{.Capacity}}</td><td class="num">{{.FirstFailure}}</td><td><code>{{.Commit}}</code></td><td><a class="report" href="{{.Href}}">{{.Path}}</a>{{if not .HasHTML}} <i>(not rendered yet: headroom report)</i>{{end}}</td><td><a href="{{.JSON}}">json</a></td><td>{{.Note}}</td></tr>
{{end}}</tbody>
</table>
{{else}}<p class="note">No result found.</p>
{{end}}
{{if .Tables}}<h2 id="tables">Side by side</h2>
{{range .Tables}}<h3>{{.Title}}</h3>
<table class="side"><thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr>{{range $i, $c := .}}{{if eq $i 0}}<th>{{$c}}</th>{{else}}<td class="num">{{$c}}</td>{{end}}{{end}}</tr>
{{end}}</tbody></table>
{{with .Note}}<p class="note">{{.}}</p>{{end}}
<p class="note"><code>{{.Path}}</code>: <a href="{{.MD}}">md</a> · <a href="{{.CSV}}">csv</a></p>
{{end}}{{end}}
{{if .HistoryFile}}<h2 id="history">Capacity history</h2>
<p>From <code>{{.HistoryFile}}</code>.</p>
{{with .HistoryErr}}<p class="note">{{.}}</p>{{end}}
{{range .History}}<h3>{{.Scenario}}</h3>
{{with .SVG}}<figure>{{.}}</figure>{{end}}
<table><thead><tr><th>Date</th><th>Commit</th><th>Capacity</th><th>Change</th><th>Verdict</th><th>What changed</th><th>Not comparable because</th></tr></thead><tbody>
{{range .Rows}}<tr><td>{{.Label}}</td><td><code>{{.Commit}}</code></td><td class="num">{{.Capacity}}</td><td class="num">{{.Change}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.What}}</td><td>{{.Break}}</td></tr>{{end}}
</tbody></table>
{{with .Changes}}<h4>Changes over the nights</h4>
{{range .}}<p>{{.Text}}</p>{{with .SVG}}<figure>{{.}}</figure>{{end}}
{{end}}{{end}}
{{end}}{{end}}
{{if .AB}}<h2 id="ab">A/B comparisons</h2>
<table><thead><tr><th>Comparison</th><th>Scenario</th><th>Verdict</th><th>Trials</th><th>Why</th></tr></thead><tbody>
{{range .AB}}<tr><td><a href="{{.Href}}">{{.Dir}}</a></td><td>{{.Scenario}}</td><td><b>{{.Verdict}}</b></td><td>{{.Trials}}</td><td>{{.Reason}}{{range .Rejected}}<div class="note">{{.}}</div>{{end}}</td></tr>{{end}}
</tbody></table>{{end}}
<p class="note">Written by Headroom at {{.Generated}}.</p>
</main>
</body>
</html>
`))
