package history

import (
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Legend explains the table's marks; Markdown prints it under the table.
const Legend = "Newest first; rows of one day are numbered in the order they ran. " +
	"**Bold**: the figure differs from the previous comparable row's, or starts a new baseline. " +
	"≥ N: a lower bound, no level failed; < N: no level passed. " +
	"Change: against the previous comparable row of the scenario."

// Markdown renders the history of scenario (every row when empty; see
// [Matches]) as a Markdown table, newest first: the date (numbered among
// rows of the same day: "2026-07-22 (6)"), the commit, the headline figure
// (bold when it says something new, "≥ N" for a lower bound), its change
// against the previous comparable row, and what changed — the row's note,
// else its commit's subject — with the reason when the row does not compare
// with the one before. A Scenario column appears when the table holds
// several scenarios; the unit moves into the figures when they have
// several units. Legend follows the table. No rows render as "".
func Markdown(rows []Row, scenario string) string {
	t := table(rows, scenario)
	if len(t.rows) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("| Date |")
	align := "|---|"
	if t.scenarios {
		b.WriteString(" Scenario |")
		align += "---|"
	}
	fmt.Fprintf(&b, " Commit | %s | Change | What changed |\n%s---|---:|---:|---|\n", t.head, align)
	for _, r := range t.rows {
		fig := r.figure
		if r.bold {
			fig = "**" + fig + "**"
		}
		commit := "—"
		if r.commit != "" {
			commit = "`" + r.commit + "`"
			if r.dirty {
				commit += " (dirty)"
			}
		}
		fmt.Fprintf(&b, "| %s |", r.label)
		if t.scenarios {
			fmt.Fprintf(&b, " %s |", cell(r.scenario))
		}
		fmt.Fprintf(&b, " %s | %s%s | %s | %s |\n", commit, fig, r.suffix, r.change, cell(r.what))
	}
	b.WriteString("\n" + Legend + "\n")
	return b.String()
}

// Text renders the history of scenario as a plain-text table for a
// terminal, newest first, with the verdict; no rows render as "".
func Text(rows []Row, scenario string) string {
	t := table(rows, scenario)
	if len(t.rows) == 0 {
		return ""
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	fmt.Fprint(tw, "DATE\t")
	if t.scenarios {
		fmt.Fprint(tw, "SCENARIO\t")
	}
	fmt.Fprintf(tw, "COMMIT\t%s\tCHANGE\tVERDICT\tWHAT CHANGED\n", strings.ToUpper(t.head))
	for _, r := range t.rows {
		fmt.Fprintf(tw, "%s\t", r.label)
		if t.scenarios {
			fmt.Fprintf(tw, "%s\t", r.scenario)
		}
		commit := r.commit
		if r.dirty {
			commit += "+"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\n", orDash(commit), r.figure, r.suffix, r.change, r.verdict, oneLine(r.what))
	}
	tw.Flush()
	return b.String()
}

type renderedTable struct {
	head      string // the figure column's heading
	scenarios bool   // several scenarios: a Scenario column
	rows      []renderedRow
}

type renderedRow struct {
	label, scenario, commit string
	dirty                   bool
	figure, suffix, change  string
	bold                    bool
	verdict                 result.Verdict
	what                    string
}

func table(rows []Row, scenario string) renderedTable {
	ordered := Order(rows, scenario)
	var t renderedTable
	units := map[string]bool{}
	names := map[string]bool{}
	for _, r := range ordered {
		units[r.Unit] = true
		names[r.Scenario] = true
	}
	t.scenarios = len(names) > 1
	t.head = "Capacity"
	var unit string
	for u := range units {
		unit = u
	}
	if len(units) == 1 && unit != "" {
		t.head = strings.ToUpper(unit[:1]) + unit[1:]
	}
	for _, r := range ordered {
		rr := renderedRow{label: r.Label, scenario: r.Scenario, commit: r.Commit[:min(7, len(r.Commit))], dirty: r.Dirty,
			figure: headline(r), verdict: r.Verdict, what: what(r), change: change(r)}
		if len(units) > 1 && r.Unit != "" {
			rr.figure += " " + r.Unit
		}
		rr.bold = r.Previous == nil || headline(*r.Previous) != headline(r)
		if r.Verdict == result.Invalid {
			rr.suffix += " (invalid)"
		}
		if r.Short {
			rr.suffix += " (short)"
		}
		t.rows = append(t.rows, rr)
	}
	return t
}

// headline is r's figure: "10,125", "≥ 10,000", "< 200", or "—" when no
// level passed or failed.
func headline(r Row) string {
	switch {
	case r.Capacity > 0 && r.LowerBound:
		return "≥ " + format.Level(r.Capacity)
	case r.Capacity > 0:
		return format.Level(r.Capacity)
	case r.FirstFailure > 0:
		return "< " + format.Level(r.FirstFailure)
	}
	return "—"
}

// change is r's capacity against its previous comparable row's, in
// percent: "+4.4%", "±0%"; "≥ +4.4%" when only r's figure is a lower bound
// (the change is at least that), "≤ …" when only the previous one's is;
// "n/a" when both are lower bounds or either figure is no capacity; "—"
// when there is no previous comparable row. When that row is not the one
// just before, its label follows: "+4.4% vs 2026-07-20".
func change(r Row) string {
	p := r.Previous
	if p == nil {
		return "—"
	}
	var s string
	switch {
	case p.Capacity <= 0 || r.Capacity <= 0 || p.LowerBound && r.LowerBound:
		s = "n/a"
	default:
		pct := (r.Capacity/p.Capacity - 1) * 100
		if math.Abs(pct) < 0.05 {
			s = "±0%"
		} else {
			s = fmt.Sprintf("%+.1f%%", pct)
		}
		switch {
		case r.LowerBound && !p.LowerBound:
			s = "≥ " + s
		case p.LowerBound && !r.LowerBound:
			s = "≤ " + s
		}
	}
	if !r.previousAdjacent {
		s += " vs " + p.Label
	}
	return s
}

// what is what changed: the note, else the commit's subject, with why the
// row does not compare with the previous one.
func what(r Row) string {
	s := r.Note
	if s == "" && r.Subject != "" {
		s = r.Subject
		if r.Dirty {
			s += " (and uncommitted changes)"
		}
	}
	if s == "" {
		s = "—"
	}
	switch {
	case r.Break == "":
	case r.NewBaseline:
		s += " — new baseline, not comparable with earlier rows"
	case r.Previous == nil:
		s += " — new baseline (" + r.Break + "), not comparable with earlier rows"
	default:
		s += " — not comparable with the previous row (" + r.Break + ")"
	}
	return s
}

// cell makes s safe in a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
