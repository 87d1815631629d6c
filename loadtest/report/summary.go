package report

import (
	"encoding/xml"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/headroom-dev/headroom/internal/format"
	"github.com/headroom-dev/headroom/loadtest"
	"github.com/headroom-dev/headroom/loadtest/result"
)

// Summary is a result reduced to what CI reads: the verdict, the capacity
// and, step by step, the level, the verdict, the rates and the latency of
// the primary request kind, with every violation and invalid reason.
// Latencies are in milliseconds.
type Summary struct {
	Scenario     string         `json:"scenario"`
	Verdict      result.Verdict `json:"verdict"`
	Partial      bool           `json:"partial"`
	Model        string         `json:"model"`
	Unit         string         `json:"unit"`
	Plan         string         `json:"plan"`
	Capacity     float64        `json:"capacity"`
	FirstFailure float64        `json:"first_failure"`
	// CapacityText is the capacity as a headline may claim it: "≥ 800
	// users (the ladder's top; nothing near a limit)" when nothing gave
	// out (loadtest.Result.CapacityText).
	CapacityText string        `json:"capacity_text"`
	Conclusion   string        `json:"conclusion,omitempty"`
	PrimaryKind  string        `json:"primary_kind,omitempty"`
	Commit       string        `json:"commit,omitempty"`
	Dirty        bool          `json:"dirty,omitempty"`
	Command      string        `json:"command,omitempty"`
	Start        time.Time     `json:"start"`
	Steps        []StepSummary `json:"steps"`
	// Errors is the verdict's every line (loadtest.Result.Err): breaches,
	// invalid steps, an incomplete run, regressions; empty on a pass.
	Errors []string `json:"errors,omitempty"`
	// Invalid lists why steps were invalid (loadtest.Result.Invalid).
	Invalid []string `json:"invalid,omitempty"`
	// Regressions lists the regressions against the baseline.
	Regressions []string `json:"regressions,omitempty"`
}

// StepSummary is one step of a Summary.
type StepSummary struct {
	Step         int            `json:"step"` // from 1
	Level        float64        `json:"level"`
	Verdict      result.Verdict `json:"verdict"`
	OfferedPerS  float64        `json:"offered_per_s"`
	AnsweredPerS float64        `json:"answered_per_s"`
	OKPerS       float64        `json:"ok_per_s"`
	// ErrorRate is the share of the step's requests (of every request
	// kind) that ended in any outcome but OK.
	ErrorRate float64 `json:"error_rate"`
	// Latency is the primary kind's, nil when the step answered none.
	Latency    *LatencySummary `json:"latency,omitempty"`
	Violations []string        `json:"violations,omitempty"`
	Unjudged   []string        `json:"unjudged,omitempty"`
	Invalid    []string        `json:"invalid,omitempty"`
	// Doubts are the machine's troubles that void a breach but not a
	// pass (result.SelfCheckResult.Doubts).
	Doubts    []string `json:"doubts,omitempty"`
	Saturated []string `json:"saturated,omitempty"`
}

// LatencySummary is a kind's latency in one step, in milliseconds.
type LatencySummary struct {
	Kind    string  `json:"kind"`
	Samples int64   `json:"samples"`
	P50Ms   float64 `json:"p50_ms"`
	P95Ms   float64 `json:"p95_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Summarize reduces res to its Summary.
func Summarize(res *loadtest.Result) Summary {
	s := Summary{Scenario: res.Scenario, Verdict: res.Verdict, Partial: res.Partial, Model: res.Model, Unit: levelUnit(res),
		Plan: describePlan(res.Plan), Capacity: res.Capacity, FirstFailure: res.FirstFailure, CapacityText: res.CapacityText(), Conclusion: res.Conclusion,
		PrimaryKind: res.PrimaryKind(), Commit: res.Provenance.Commit, Dirty: res.Provenance.Dirty, Command: res.Provenance.Command,
		Start: res.Start.UTC(), Steps: []StepSummary{}, Invalid: res.Invalid()}
	if err := res.Err(); err != nil {
		s.Errors = strings.Split(err.Error(), "\n")
	}
	if res.Baseline != nil {
		s.Regressions = res.Baseline.Regressions
	}
	for _, st := range res.Steps {
		ss := StepSummary{Step: st.Index + 1, Level: st.Step.Level, Verdict: st.Verdict,
			OfferedPerS: round3(st.Offered), AnsweredPerS: round3(st.Achieved), OKPerS: round3(st.Throughput),
			Violations: st.Violations, Unjudged: st.Unjudged, Invalid: st.Self.Reasons, Doubts: st.Self.Doubts, Saturated: st.Saturated}
		var total, bad int64
		for _, k := range st.Kinds {
			if !k.Observed {
				total += k.Total()
				bad += k.Total() - k.Outcomes[loadtest.OK]
			}
		}
		if total > 0 {
			ss.ErrorRate = round3(float64(bad) / float64(total))
		}
		if k := st.Kind(s.PrimaryKind); k != nil && k.Latency.P50 > 0 {
			ss.Latency = &LatencySummary{Kind: k.Kind, Samples: k.Answered(), P50Ms: round3(ms(k.Latency.P50)),
				P95Ms: round3(ms(k.Latency.P95)), P99Ms: round3(ms(k.Latency.P99)), MaxMs: round3(ms(k.Latency.Max))}
		}
		s.Steps = append(s.Steps, ss)
	}
	return s
}

// JUnit types: the subset of the JUnit XML format CI systems read.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr,omitempty"`
	Cases     []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// JUnit renders results as JUnit XML: a test suite per result (its
// scenario), a test case per step — failed for a breach, an error when
// invalid (the generator, not the target, was the bottleneck, or too
// little data), skipped when incomplete — and a case for the baseline
// comparison when it found regressions, and one for a result without any
// step.
func JUnit(results ...*loadtest.Result) ([]byte, error) {
	var all junitSuites
	for _, res := range results {
		suite := junitSuite{Name: res.Scenario, Time: secs(res.End.Sub(res.Start).Seconds())}
		if !res.Start.IsZero() {
			suite.Timestamp = res.Start.UTC().Format(time.RFC3339)
		}
		knee := res.Plan.Type == "knee" && res.Capacity > 0
		for _, st := range res.Steps {
			c := junitCase{Name: fmt.Sprintf("step %d (level %s %s)", st.Index+1, format.Level(st.Step.Level), levelUnit(res)),
				Classname: res.Scenario, Time: secs(st.Seconds()), SystemOut: st.String()}
			switch st.Verdict {
			case result.Fail:
				if knee {
					// A knee search fails probes on purpose.
					c.SystemOut += "\nfailed probe of a knee search (expected): " + strings.Join(st.Violations, "; ")
					break
				}
				c.Failure = &junitMessage{Message: format.FirstOr(st.Violations, "a check failed"), Type: "breach",
					Text: strings.Join(append(append([]string(nil), st.Violations...), st.Saturated...), "\n")}
			case result.Invalid:
				reasons := st.InvalidReasons()
				c.Error = &junitMessage{Message: format.FirstOr(reasons, "invalid"), Type: "invalid", Text: strings.Join(reasons, "\n")}
			case result.Incomplete:
				c.Skipped = &junitMessage{Message: "incomplete: the run was interrupted during this step"}
			}
			suite.add(c)
		}
		if len(res.Steps) == 0 {
			c := junitCase{Name: "run", Classname: res.Scenario, Time: "0"}
			c.Skipped = &junitMessage{Message: "no step measured: " + format.FirstOr([]string{res.Conclusion}, "incomplete")}
			suite.add(c)
		}
		if b := res.Baseline; b != nil && len(b.Regressions) > 0 {
			suite.add(junitCase{Name: "baseline", Classname: res.Scenario, Time: "0",
				Failure: &junitMessage{Message: "regression against " + b.Path, Type: "regression", Text: strings.Join(b.Regressions, "\n")}})
		}
		all.Suites = append(all.Suites, suite)
		all.Tests += suite.Tests
		all.Failures += suite.Failures
		all.Errors += suite.Errors
		all.Skipped += suite.Skipped
	}
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

func (s *junitSuite) add(c junitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Failures++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
}

func secs(v float64) string { return fmt.Sprintf("%.3f", math.Max(v, 0)) }
