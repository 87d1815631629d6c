package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/headroom-dev/headroom/loadtest/study"
)

// isStudyFile reports whether path names a study file (study.json,
// study.short.json) rather than a result.
func isStudyFile(path string) bool {
	base := filepath.Base(path)
	return strings.HasPrefix(base, "study.") && strings.HasSuffix(base, ".json")
}

// renderStudies prints one runtime-studies page for the study files named
// in args, or found under the directories named (default
// testdata/results): a lab profile, then every study's tables, in the
// order of their paths. With both a full and a -short study of one test,
// both are shown, each marked. With out, the page goes to out/README.md
// with a CSV beside each table (study.WritePage): how the committed
// reference pages under testdata/reference/studies are made.
func renderStudies(args []string, out string, stdout io.Writer) error {
	if len(args) == 0 {
		args = []string{filepath.Join("testdata", "results")}
	}
	var paths []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			paths = append(paths, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && isStudyFile(p) {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(paths) == 0 {
		return fmt.Errorf("no study file (study.json, study.short.json) under %s: run a study first, e.g. go test -tags load -run TestLoad_Forward ./loadtest/scenarios/", strings.Join(args, ", "))
	}
	slices.Sort(paths)
	var studies []*study.Study
	for _, p := range paths {
		s, err := study.Read(p)
		if err != nil {
			return err
		}
		studies = append(studies, s)
	}
	if out != "" {
		if err := study.WritePage(out, studies...); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s and %d CSV files\n", filepath.Join(out, study.PageFile), countTables(studies))
	} else if _, err := io.WriteString(stdout, study.Page(studies...)); err != nil {
		return err
	}
	for _, s := range studies {
		if err := s.Err(); err != nil {
			return &exitError{exitFail, fmt.Errorf("%s: %w", s.Name, err)}
		}
	}
	return nil
}

func countTables(studies []*study.Study) int {
	n := 0
	for _, s := range studies {
		n += len(s.Tables)
	}
	return n
}
