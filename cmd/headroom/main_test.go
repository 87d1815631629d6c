package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/headroom-dev/headroom/loadtest"
)

func TestRunRenderCompareHistoryPlot(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "a.json")
	var stdout bytes.Buffer
	require.NoError(t, runCmd([]string{"-url", srv.URL, "-rates", "20,40", "-ramp", "0s", "-hold", "1s", "-o", out}, &stdout))
	assert.Contains(t, stdout.String(), "**pass** — capacity **40 arrivals/s**")
	res, err := loadtest.ReadResult(out)
	require.NoError(t, err)
	assert.Len(t, res.Steps, 2)
	assert.FileExists(t, filepath.Join(dir, "a.md"))

	stdout.Reset()
	require.NoError(t, render([]string{out}, &stdout))
	assert.Contains(t, stdout.String(), "| Arrivals/s | Requests/s |")

	stdout.Reset()
	require.NoError(t, compare([]string{out, out}, &stdout))
	assert.Contains(t, stdout.String(), "no regression")

	// A copy whose capacity halved is a regression: exit status 1.
	res.Capacity = 20
	worse := filepath.Join(dir, "b.json")
	require.NoError(t, res.WriteFile(worse))
	stdout.Reset()
	err = compare([]string{out, worse}, &stdout)
	assert.ErrorAs(t, err, new(regressed))
	assert.Contains(t, stdout.String(), "capacity dropped from 40 to 20")

	stdout.Reset()
	require.NoError(t, history([]string{dir}, &stdout))
	assert.Equal(t, 3, strings.Count(stdout.String(), "\n"), stdout.String())

	gold := filepath.Join(dir, "golden", "a.json")
	stdout.Reset()
	require.NoError(t, baseline([]string{"-o", gold, out}, &stdout))
	b, err := loadtest.ReadBaseline(gold)
	require.NoError(t, err)
	assert.Equal(t, 40.0, b.Capacity)
	assert.Len(t, b.Steps, 2)

	svg := filepath.Join(dir, "a.svg")
	require.NoError(t, plot([]string{"-o", svg, out}, &stdout))
	img, err := os.ReadFile(svg)
	require.NoError(t, err)
	assert.Contains(t, string(img), "<svg")
	assert.Contains(t, string(img), "polyline")
}

func TestRunRefusesRemoteTargets(t *testing.T) {
	for _, u := range []string{"http://10.1.2.3/", "https://8.8.8.8/x"} {
		err := runCmd([]string{"-url", u}, &bytes.Buffer{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not loopback")
	}
	assert.ErrorContains(t, runCmd([]string{"-url", "ftp://x"}, &bytes.Buffer{}), "not an absolute http(s) URL")
	assert.ErrorContains(t, runCmd(nil, &bytes.Buffer{}), "-url is required")
	assert.ErrorContains(t, runCmd([]string{"-url", "http://127.0.0.1:1/", "-rates", "x"}, &bytes.Buffer{}), "-rates")
}
