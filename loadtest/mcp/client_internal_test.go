package mcp

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every stateless request's params carry _meta first, whatever the params
// were: none, an empty object, an object with members.
func TestWithMeta(t *testing.T) {
	meta := requestMeta(Options{ProtocolVersion: StatelessVersion, ClientName: "n", ClientVersion: "1"})
	for _, tc := range []struct{ in, wantRest string }{
		{"null", ""},
		{"", ""},
		{"{}", ""},
		{" { } ", ""},
		{`{"name":"t","arguments":{}}`, `"name":"t","arguments":{}`},
	} {
		out := withMeta([]byte(tc.in), meta)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(out, &m), "%q → %s", tc.in, out)
		var got struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		require.NoError(t, json.Unmarshal(out, &got))
		assert.JSONEq(t, `"2026-07-28"`, string(got.Meta[metaProtocolVersion]), "%s", out)
		assert.JSONEq(t, `{}`, string(got.Meta[metaClientCapabilities]))
		assert.JSONEq(t, `{"name":"n","version":"1"}`, string(got.Meta[metaClientInfo]))
		want := "{" + string(meta)
		if tc.wantRest != "" {
			want += "," + tc.wantRest
		}
		var compact bytes.Buffer
		require.NoError(t, json.Compact(&compact, out))
		assert.Equal(t, want+"}", compact.String())
	}
}

// Header values that are not plain printable ASCII go in SEP-2243's base64
// form; plain ones as they are.
func TestHeaderValue(t *testing.T) {
	for in, want := range map[string]string{
		"gh__tool_01":     "gh__tool_01",
		"outil_é":         "=?base64?b3V0aWxfw6k=?=",
		" padded":         "=?base64?IHBhZGRlZA==?=",
		"=?base64?abc?=":  "=?base64?PT9iYXNlNjQ/YWJjPz0=?=",
		"line\nbreak":     "=?base64?bGluZQpicmVhaw==?=",
		"tab\tin between": "=?base64?dGFiCWluIGJldHdlZW4=?=",
	} {
		assert.Equal(t, want, headerValue(in), "%q", in)
	}
}
