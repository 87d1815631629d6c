package server

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseRequest(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		code   int    // 0: valid
		id     string // the id an answer carries
		notify bool
	}{
		// A plain request with a number id.
		{name: "request", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, id: "1"},
		// A string id.
		{name: "string_id", body: `{"jsonrpc":"2.0","id":"x","method":"ping","params":{}}`, id: `"x"`},
		// No id: a notification.
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, id: "null", notify: true},
		// Whitespace around the object.
		{name: "whitespace", body: " \n{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"ping\"}\n", id: "-3"},
		// Not JSON.
		{name: "garbage", body: `hello`, code: CodeParseError, id: "null"},
		// Empty body.
		{name: "empty", body: ``, code: CodeParseError, id: "null"},
		// A batch.
		{name: "batch", body: `[]`, code: CodeInvalidRequest, id: "null"},
		// A number.
		{name: "number", body: `42`, code: CodeInvalidRequest, id: "null"},
		// jsonrpc missing: the id is still answered.
		{name: "no_version", body: `{"id":9,"method":"ping"}`, code: CodeInvalidRequest, id: "9"},
		// A null id is not allowed by MCP.
		{name: "null_id", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		// A boolean id.
		{name: "bool_id", body: `{"jsonrpc":"2.0","id":true,"method":"ping"}`, code: CodeInvalidRequest, id: "null"},
		// An empty method.
		{name: "empty_method", body: `{"jsonrpc":"2.0","id":1,"method":""}`, code: CodeInvalidRequest, id: "1"},
	}
	for _, tc := range tests {
		t.Run("body="+tc.name, func(t *testing.T) {
			req, id, err := parseRequest([]byte(tc.body))
			assert.Equal(t, tc.id, string(id))
			if tc.code != 0 {
				if assert.NotNil(t, err) {
					assert.Equal(t, tc.code, err.Code)
				}
				return
			}
			assert.Nil(t, err)
			assert.Equal(t, tc.notify, req.isNotification())
		})
	}
}

func TestDecodeParams(t *testing.T) {
	var dst struct {
		Name string `json:"name"`
	}
	tests := []struct {
		params   string
		optional bool
		wantErr  bool
	}{
		{params: `{"name":"a"}`},                       // an object
		{params: ``, optional: true},                   // missing, optional
		{params: `null`, optional: true},               // null, optional
		{params: ``, wantErr: true},                    // missing, required
		{params: `[1]`, optional: true, wantErr: true}, // an array
		{params: `{"name":1}`, wantErr: true},          // a field of the wrong type
	}
	for _, tc := range tests {
		t.Run("params="+tc.params, func(t *testing.T) {
			err := decodeParams(json.RawMessage(tc.params), &dst, tc.optional)
			if tc.wantErr {
				if assert.NotNil(t, err) {
					assert.Equal(t, CodeInvalidParams, err.Code)
				}
			} else {
				assert.Nil(t, err)
			}
		})
	}
}
