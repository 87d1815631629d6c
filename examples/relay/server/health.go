package server

import (
	"context"
	"net/http"
	"time"

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

// Readiness is the answer of GET /readyz.
type Readiness struct {
	// Status is "ready", "not ready" or "draining".
	Status string `json:"status"`
	// Database is the backend: "postgres" or "sqlite".
	Database string `json:"database"`
	// SchemaVersion is the applied schema version; WantSchemaVersion the
	// newest this relay knows.
	SchemaVersion     int `json:"schema_version"`
	WantSchemaVersion int `json:"want_schema_version"`
	// UpstreamMode is "async" or "sync"; Workers is set in sync mode.
	UpstreamMode string `json:"upstream_mode"`
	Workers      int    `json:"workers,omitempty"`
	// Metrics says whether GET /metrics is on.
	Metrics bool `json:"metrics"`
	// Faults lists the injected regressions that are on.
	Faults []string `json:"faults,omitempty"`
	// Version is the relay's version.
	Version string `json:"version"`
	// Error says what is wrong when not ready.
	Error string `json:"error,omitempty"`
}

// handleHealthz serves GET /healthz: 200 while the process runs.
func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// handleReadyz serves GET /readyz: 200 only when the database answers and
// the schema is at the version this relay needs, 503 otherwise and while
// draining.
func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	rd := s.readiness(r.Context())
	code := http.StatusOK
	if rd.Status != "ready" {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, rd)
}

func (s *Server) readiness(ctx context.Context) Readiness {
	d := schema.Dialect(s.store.dialect())
	rd := Readiness{
		Status:            "ready",
		Database:          string(d),
		WantSchemaVersion: latestVersion(d),
		UpstreamMode:      s.cfg.UpstreamMode,
		Metrics:           s.cfg.Metrics,
		Faults:            s.cfg.Faults.List(),
		Version:           Version,
	}
	if s.cfg.UpstreamMode == ModeSync {
		rd.Workers = s.cfg.Workers
	}
	if s.draining.Load() {
		rd.Status = "draining"
		rd.Error = "the relay is shutting down"
		return rd
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	v, err := s.store.schemaVersion(ctx)
	rd.SchemaVersion = v
	switch {
	case err != nil:
		rd.Status, rd.Error = "not ready", "the database does not answer: "+err.Error()
	case v < rd.WantSchemaVersion:
		rd.Status, rd.Error = "not ready", "the schema is behind: migrations not applied"
	}
	return rd
}
