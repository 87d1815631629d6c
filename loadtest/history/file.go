package history

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/headroom-dev/headroom/internal/files"
)

// DefaultFile is the history file of a repository, relative to its module
// root.
const DefaultFile = "testdata/history.jsonl"

// DefaultPath returns DefaultFile under the module root of the current
// directory, or DefaultFile itself outside a module.
func DefaultPath() string {
	root, err := files.ModuleRoot()
	if err != nil {
		return filepath.FromSlash(DefaultFile)
	}
	return filepath.Join(root, filepath.FromSlash(DefaultFile))
}

// Append adds rows to the history file at path, one JSON line each,
// creating the file (and its directory) when missing. It refuses every
// row when one is invalid (see [Row.Validate]): nothing is written then.
//
// The file is only ever appended to: opened with O_APPEND, all the rows
// written in one write under an exclusive lock (flock, where the system has
// it), then synced, so that concurrent appends never interleave their lines
// and history already written is never rewritten. A last line left without
// its newline (a crash mid-write) is ended first, so that it cannot swallow
// the new rows; Read reports it.
//
// A history holds each run once: a row of a run already in the file (or
// twice among rows) refuses them all with ErrAlreadyAdded — checked under
// the lock, so that two processes adding one result at once add it once.
func Append(path string, rows ...Row) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i, r := range rows {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("history: %s (%s): %w", r.Scenario, r.Date.Format("2006-01-02 15:04"), err)
		}
		for _, o := range rows[:i] {
			if o.SameRun(r) {
				return fmt.Errorf("history: %s (%s) is given twice: %w", r.Scenario, r.Date.Format("2006-01-02 15:04:05"), ErrAlreadyAdded)
			}
		}
		if r.Schema == 0 {
			r.Schema = Schema
		}
		if err := enc.Encode(r); err != nil { // one line: the encoder escapes newlines in strings
			return fmt.Errorf("history: encode: %w", err)
		}
	}
	if buf.Len() == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lock(f); err != nil {
		return fmt.Errorf("history: lock %s: %w", path, err)
	}
	// Closing the file releases the lock.
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	held := make([]byte, fi.Size())
	if _, err := f.ReadAt(held, 0); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("history: read %s: %w", path, err)
	}
	existing, _ := parse(path, held) // a malformed line is Read's to report
	for _, r := range rows {
		for _, o := range existing {
			if o.SameRun(r) {
				return fmt.Errorf("history: the run of %s at %s is already in %s; nothing was added (%w)",
					r.Scenario, r.Date.Format("2006-01-02 15:04:05"), path, ErrAlreadyAdded)
			}
		}
	}
	out := buf.Bytes()
	if n := fi.Size(); n > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, n-1); err != nil {
			return fmt.Errorf("history: read %s: %w", path, err)
		}
		if last[0] != '\n' {
			out = append([]byte{'\n'}, out...)
		}
	}
	if _, err := f.Write(out); err != nil {
		return fmt.Errorf("history: append to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("history: sync %s: %w", path, err)
	}
	return f.Close()
}

// Read returns the rows of the history file at path in the order they were
// added. A missing file is an error that errors.Is(err, fs.ErrNotExist)
// tells; a malformed line is an error naming the file and the line.
func Read(path string) ([]Row, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rows, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// ErrAlreadyAdded is the error of Append for a run the history holds.
var ErrAlreadyAdded = errors.New("a history holds each run once")

// SameRun reports whether r and o record one run: one scenario, started
// at one instant, from one commit.
func (r Row) SameRun(o Row) bool {
	return r.Scenario == o.Scenario && r.Date.Equal(o.Date) && r.Commit == o.Commit
}

// parse reads the rows of a history file's content; path names it in
// errors. It returns every row it could read, and the first malformed
// line's error.
func parse(path string, data []byte) ([]Row, error) {
	var rows []Row
	var first error
	for i, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var r Row
		if err := json.Unmarshal(line, &r); err != nil {
			first = cmp.Or(first, fmt.Errorf("%s:%d: not a history row (%v); the file is append-only and nothing rewrites it: repair or delete that line by hand", path, i+1, err))
			continue
		}
		if r.Schema > Schema {
			first = cmp.Or(first, fmt.Errorf("%s:%d: row format %d is newer than this Headroom's %d; upgrade", path, i+1, r.Schema, Schema))
			continue
		}
		rows = append(rows, r)
	}
	return rows, first
}

var commitID = regexp.MustCompile(`^[0-9a-fA-F]{4,64}$`)

// CommitSubject returns the subject line of commit in the git repository
// at dir, or "" when git, the repository or the commit is missing.
func CommitSubject(dir, commit string) string {
	if !commitID.MatchString(commit) {
		return ""
	}
	out, err := exec.Command("git", "-C", dir, "log", "-1", "--format=%s", commit, "--").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
