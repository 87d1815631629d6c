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
// both are shown, each marked.
func renderStudies(args []string, stdout io.Writer) error {
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
	_, err := io.WriteString(stdout, study.Page(studies...))
	if err != nil {
		return err
	}
	for _, s := range studies {
		if err := s.Err(); err != nil {
			return &exitError{exitFail, fmt.Errorf("%s: %w", s.Name, err)}
		}
	}
	return nil
}
