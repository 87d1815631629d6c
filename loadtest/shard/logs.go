package shard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/headroom-dev/headroom/loadtest"
)

// Emit prints res on w between BeginMarker and EndMarker, as one line of
// JSON, for Read to find in a log.
func Emit(w io.Writer, res *loadtest.Result) error {
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n%s\n%s\n", BeginMarker, b, EndMarker)
	return err
}

// Read reads the shards' results from r: a result file (JSON), or logs —
// one or several pods' (kubectl logs, any lines around) — holding results
// printed by Emit. A shard prints its result after every step and at the
// end, so of one shard's results the last one read wins: a shard killed
// mid-run leaves the steps it finished.
func Read(name string, r io.Reader) ([]*loadtest.Result, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		var res loadtest.Result
		if err := json.Unmarshal(t, &res); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return []*loadtest.Result{&res}, nil
	}
	var out []*loadtest.Result
	last := map[int]int{} // shard index → position in out
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	in, line := false, 0
	var body strings.Builder
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasSuffix(text, BeginMarker): // kubectl --prefix puts the pod's name before it
			in = true
			body.Reset()
		case in && strings.HasSuffix(text, EndMarker):
			in = false
			var res loadtest.Result
			if err := json.Unmarshal([]byte(body.String()), &res); err != nil {
				return nil, fmt.Errorf("%s:%d: the result before this line: %w", name, line, err)
			}
			idx := -1
			if res.Shard != nil {
				idx = res.Shard.Index
			}
			if i, ok := last[idx]; ok && idx >= 0 {
				out[i] = &res
			} else {
				last[idx] = len(out)
				out = append(out, &res)
			}
		case in:
			if _, rest, ok := strings.Cut(text, "{"); ok && !strings.HasPrefix(text, "{") { // a --prefix'ed line
				text = "{" + rest
			}
			body.WriteString(text)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: neither a result file nor logs holding a %q line", name, BeginMarker)
	}
	return out, nil
}
