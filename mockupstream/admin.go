package mockupstream

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// The admin endpoints are for the test that drives the upstream: they ask
// for Config.AdminToken (ADMIN_TOKEN), not the callers' AUTH_TOKEN.

// admin guards an admin endpoint with Config.AdminToken.
func (s *Server) admin(h http.HandlerFunc) http.HandlerFunc {
	if s.cfg.AdminToken == "" {
		return h
	}
	want := []byte("Bearer " + s.cfg.AdminToken)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			writeError(w, http.StatusUnauthorized, errors.New("admin endpoints need the server's ADMIN_TOKEN as a bearer token (mockupstream.Client.Token)"))
			return
		}
		h(w, r)
	}
}

// getBehavior serves GET /admin/behavior: the behaviour in force as JSON.
func (s *Server) getBehavior(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Behavior())
}

// postBehavior serves POST (or PUT) /admin/behavior: the body, a whole
// Behavior, replaces the one in force for the next request. Unknown fields
// and invalid values are answered 400 with {"error": "..."} naming the
// field; the behaviour in force is then unchanged. On success it answers
// the new behaviour (seed filled in).
func (s *Server) postBehavior(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("behavior body: %w", err))
		return
	}
	b, err := DecodeBehavior(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	m, err := NewModel(b)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	s.model.Store(m)
	writeJSON(w, http.StatusOK, m.Behavior())
}

// getStats serves GET /admin/stats.
func (s *Server) getStats(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.Stats())
}

// postReset serves POST /admin/reset: see [Server.Reset].
func (s *Server) postReset(w http.ResponseWriter, _ *http.Request) {
	s.Reset()
	writeJSON(w, http.StatusOK, s.Behavior())
}

// DecodeBehavior reads a Behavior from JSON, rejecting unknown fields and
// trailing data, and validates it. Errors name the field.
func DecodeBehavior(data []byte) (Behavior, error) {
	var b Behavior
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		if ute, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && ute.Field != "" {
			want := ute.Type.String()
			if ute.Type == durationType {
				want = durationWant
			}
			return Behavior{}, &FieldError{Field: ute.Field, Problem: fmt.Sprintf("got JSON %s, want %s", ute.Value, want)}
		}
		return Behavior{}, fmt.Errorf("behavior JSON: %w", err)
	}
	if dec.More() {
		return Behavior{}, errors.New("behavior JSON: trailing data after the object")
	}
	return b, b.Validate()
}

// errorBody is the JSON body of an admin error.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, errorBody{Error: err.Error()})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
