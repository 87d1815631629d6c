package study

import (
	"fmt"
	"strconv"
	"strings"
)

// Portability is the sentence every page carries about absolute figures.
const Portability = "Absolute rates and latencies are not portable across hosts: read each cell relative to its baseline cell on the same host, and reproduce on your hardware before making capacity decisions."

// Page renders studies as one Markdown page in the form of a
// reference-results page: the portability note, a lab-profile table per
// distinct lab, then each study's reading and tables, each row a cell with
// its baseline marked ("baseline", or "vs <cell>" with the ratio of the
// achieved rate when both have one).
func Page(studies ...*Study) string { return page(studies, nil) }

// page renders Page; csv, when given, names the CSV file of a study's
// i-th table, linked below it.
func page(studies []*Study, csv func(s *Study, i int) string) string {
	var b strings.Builder
	b.WriteString("# Runtime studies\n\n")
	b.WriteString(Portability + " These are measurements, not service-level objectives.\n\n")
	var seen []Lab
	for _, s := range studies {
		if !containsLab(seen, s.Lab) {
			seen = append(seen, s.Lab)
		}
	}
	for i, p := range seen {
		title := "Lab profile"
		if len(seen) > 1 {
			title = fmt.Sprintf("Lab profile %d", i+1)
		}
		fmt.Fprintf(&b, "## %s\n\n| Field | Value |\n|---|---|\n", title)
		row := func(k, v string) {
			if v != "" {
				fmt.Fprintf(&b, "| %s | %s |\n", k, cell(v))
			}
		}
		row("Host", p.Host)
		row("CPU", p.CPU)
		row("Cores (logical)", strconv.Itoa(p.Cores))
		row("OS", strings.TrimSpace(p.OS+" "+p.Kernel))
		row("Go", p.Go)
		row("Backend", strings.TrimSpace(p.Backend+" "+p.Engine))
		row("Target", p.Target)
		row("Target limits", p.Limits)
		row("Components", strings.Join(p.Components, ", "))
		row("Loadgen", p.Generator)
		row("Commit", p.Commit)
		b.WriteString("\n")
	}
	for _, s := range studies {
		fmt.Fprintf(&b, "## %s\n\n", s.Title)
		if s.Reading != "" {
			b.WriteString(s.Reading + "\n\n")
		}
		meta := []string{"study `" + s.Name + "`", "written " + s.Generated.Format("2006-01-02T15:04:05Z")}
		if s.Short {
			meta = append(meta, "-short sizes")
		}
		if len(seen) > 1 {
			for i, p := range seen {
				if labEqual(p, s.Lab) {
					meta = append(meta, fmt.Sprintf("lab %d", i+1))
				}
			}
		}
		b.WriteString(strings.Join(meta, " · ") + "\n\n")
		if s.Command != "" {
			fmt.Fprintf(&b, "```sh\n%s\n```\n\n", s.Command)
		}
		cells := map[string]Row{}
		for _, t := range s.Tables {
			for _, r := range t.Rows {
				if _, ok := cells[r.Cell]; !ok {
					cells[r.Cell] = r
				}
			}
		}
		for i, t := range s.Tables {
			writeTable(&b, t, cells)
			if csv != nil {
				fmt.Fprintf(&b, "CSV: [%[1]s](%[1]s)\n\n", csv(s, i))
			}
		}
		if len(s.Problems) > 0 {
			b.WriteString("**The study's reading did not hold:**\n\n")
			for _, p := range s.Problems {
				fmt.Fprintf(&b, "- %s\n", p)
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}

// writeTable renders one table; a row read against a cell of the study
// shows the ratio of their achieved rates ("achieved" figures) beside it.
func writeTable(b *strings.Builder, t *Table, cells map[string]Row) {
	fmt.Fprintf(b, "### %s\n\n| Cell | Read against |", t.Title)
	for _, c := range t.Columns {
		fmt.Fprintf(b, " %s |", c.Title)
	}
	b.WriteString("\n|---|---|")
	for range t.Columns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		against := "**baseline**"
		if r.Baseline != "" {
			against = r.Baseline
			base, ok := cells[r.Baseline]
			if a, okA := r.Figures["achieved"]; ok && okA {
				if ba := base.Figures["achieved"]; ba > 0 {
					against += fmt.Sprintf(" (×%.2f achieved)", a/ba)
				}
			}
		}
		fmt.Fprintf(b, "| %s | %s |", cell(r.Cell), cell(against))
		for _, c := range t.Columns {
			fmt.Fprintf(b, " %s |", cell(r.value(c)))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// value renders a row's column: its label, else its figure, else "–".
func (r Row) value(c Column) string {
	if v, ok := r.Labels[c.Key]; ok {
		return v
	}
	if v, ok := r.Figures[c.Key]; ok {
		return strconv.FormatFloat(v, 'f', c.Digits, 64)
	}
	return "–"
}

// cell escapes a table cell's pipes.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func containsLab(ps []Lab, p Lab) bool {
	for _, q := range ps {
		if labEqual(q, p) {
			return true
		}
	}
	return false
}

// labEqual compares the lab's facts, not the commit or the components'
// list order.
func labEqual(a, b Lab) bool {
	return a.Host == b.Host && a.CPU == b.CPU && a.Cores == b.Cores && a.OS == b.OS && a.Kernel == b.Kernel &&
		a.Go == b.Go && a.Backend == b.Backend && a.Target == b.Target && a.Limits == b.Limits
}
