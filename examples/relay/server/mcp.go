package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/headroom-dev/headroom/examples/relay/schema"
)

// ToolSeparator joins a connector's name and an upstream tool's name into
// the name clients see: "<connector>__<tool>".
const ToolSeparator = "__"

// ProtocolVersion is the revision initialize answers when asked for one
// it does not speak (2026-07-28 included: that revision has no handshake).
const ProtocolVersion = "2025-06-18"

// supportedVersions are the MCP revisions an initialize may ask for: those
// of the handshake era.
var supportedVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

// headerVersions are the revisions the relay accepts in VersionHeader:
// the handshake era's and the stateless era's.
var headerVersions = append(slices.Clone(supportedVersions), StatelessVersion)

// SessionHeader is the header initialize answers with the session id in.
const SessionHeader = "Mcp-Session-Id"

// VersionHeader is the header in which clients name the negotiated
// revision on the requests after initialize (revisions from 2025-06-18 on).
const VersionHeader = "MCP-Protocol-Version"

// versionHeaderError returns why the relay refuses r's VersionHeader, or
// "" when r names no revision (an earlier one) or one the relay speaks. A
// refused request is answered 400: "If the server receives a request with
// an invalid or unsupported MCP-Protocol-Version, it MUST respond with 400
// Bad Request" (transports, revisions from 2025-06-18 on).
func versionHeaderError(r *http.Request) string {
	v := r.Header.Get(VersionHeader)
	if v == "" || slices.Contains(headerVersions, v) {
		return ""
	}
	return fmt.Sprintf("unsupported %s %q: the relay speaks %s", VersionHeader, v, strings.Join(headerVersions, ", "))
}

// recordTimeout bounds writing a call's rows, which happens even when the
// client has gone.
const recordTimeout = 10 * time.Second

// handleMCP serves POST /mcp: one JSON-RPC request per body, of either
// era: the handshake's (initialize, then requests in a session) or the
// stateless one's (see statelessRequest), told apart per request.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request) {
	p, ok := s.principalFor(w, r)
	if !ok {
		return
	}
	if msg := versionHeaderError(r); msg != "" {
		writeRPCError(w, http.StatusBadRequest, nullID, newRPCError(CodeInvalidRequest, "%s", msg))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nullID,
				newRPCError(CodeInvalidRequest, "request body larger than %d bytes (RELAY_MAX_BODY_BYTES)", tooBig.Limit))
			return
		}
		writeJSONError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return
	}
	req, id, rerr := parseRequest(body)
	if rerr != nil {
		writeRPCError(w, http.StatusBadRequest, id, rerr)
		return
	}
	if req.isNotification() {
		// notifications/initialized and the like: nothing to answer.
		w.WriteHeader(http.StatusAccepted)
		return
	}
	stateless, rerr := statelessRequest(r.Header, req)
	if rerr != nil {
		writeRPCError(w, http.StatusBadRequest, req.ID, rerr)
		return
	}
	if stateless && req.Method == "subscriptions/listen" {
		// A held stream, not a call: a drain does not wait for it.
		s.listen(w, r, p, req)
		return
	}
	s.calls.begin()
	defer s.calls.end()
	// The request ends with its client, or when a drain runs out of time.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.baseCtx, cancel)()
	switch {
	case req.Method == "initialize" && !stateless:
		s.initialize(w, req)
	case req.Method == "ping" && !stateless:
		writeRPCResult(w, req.ID, json.RawMessage(`{}`), false)
	case req.Method == "server/discover":
		// Already carries the serverInfo _meta, in either era.
		writeRPCResult(w, req.ID, discoverResult, false)
	case req.Method == "tools/list":
		res, rerr := s.toolsList(ctx, p, req.Params)
		if rerr != nil {
			writeRPCError(w, http.StatusOK, req.ID, rerr)
			return
		}
		writeRPCResult(w, req.ID, res, stateless)
	case req.Method == "tools/call":
		res, rerr := s.toolsCall(ctx, p, req.Params)
		if rerr != nil {
			writeRPCError(w, http.StatusOK, req.ID, rerr)
			return
		}
		writeRPCResult(w, req.ID, res, stateless)
	case stateless:
		// As the MCP Go SDK's server answers a method it does not know at
		// this revision (no session any more, so 404 means the method).
		writeRPCError(w, http.StatusNotFound, req.ID, methodNotFound(req.Method, stateless))
	default:
		writeRPCError(w, http.StatusOK, req.ID, methodNotFound(req.Method, stateless))
	}
}

func (s *Server) initialize(w http.ResponseWriter, req rpcRequest) {
	var params struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if rerr := decodeParams(req.Params, &params, true); rerr != nil {
		writeRPCError(w, http.StatusOK, req.ID, rerr)
		return
	}
	version := ProtocolVersion
	if slices.Contains(supportedVersions, params.ProtocolVersion) {
		version = params.ProtocolVersion
	}
	res, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{"listChanged": false}},
		"serverInfo":      map[string]any{"name": "headroom-relay", "version": Version},
	})
	w.Header().Set(SessionHeader, rand.Text())
	writeRPCResult(w, req.ID, res, false)
}

// toolsList gathers the tools of every connector of p, concurrently, and
// names each "<connector>__<tool>". Connectors that fail are left out; when
// all fail the list is an error.
func (s *Server) toolsList(ctx context.Context, p principal, params json.RawMessage) (json.RawMessage, *rpcError) {
	var pp struct {
		Cursor string `json:"cursor"`
	}
	if rerr := decodeParams(params, &pp, true); rerr != nil {
		return nil, rerr
	}
	if d := s.cfg.Faults.ListLatency; d > 0 {
		if err := sleepCtx(ctx, d); err != nil {
			return nil, newRPCError(CodeInternalError, "cancelled")
		}
	}
	if res, ok := s.lists.get(p.UserID, time.Now()); ok {
		return res, nil
	}
	type part struct {
		tools []json.RawMessage
		err   error
	}
	parts := make([]part, len(p.Connectors))
	var wg sync.WaitGroup
	for i, c := range p.Connectors {
		wg.Go(func() {
			res, _, err := s.up.rpc(ctx, c.URL, "tools/list", struct{}{})
			if err == nil {
				parts[i].tools, err = prefixTools(c.Name, res)
			}
			parts[i].err = err
		})
	}
	wg.Wait()
	tools := make([]json.RawMessage, 0, 32)
	var failed []string
	for i, pt := range parts {
		if pt.err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", p.Connectors[i].Name, pt.err))
			continue
		}
		tools = append(tools, pt.tools...)
	}
	if len(failed) > 0 {
		s.log.Warn("relay: tools/list: connectors failed", "user_id", p.UserID, "failed", failed)
		if len(failed) == len(parts) {
			return nil, newRPCError(CodeInternalError, "no connector answered tools/list: %s", strings.Join(failed, "; "))
		}
	}
	res, err := json.Marshal(struct {
		Tools []json.RawMessage `json:"tools"`
	}{tools})
	if err != nil {
		return nil, newRPCError(CodeInternalError, "encoding the tool list: %v", err)
	}
	if len(failed) == 0 {
		s.lists.put(p.UserID, res, time.Now())
	}
	return res, nil
}

// prefixTools renames each tool of an upstream tools/list result to
// "<connector>__<tool>", keeping its other fields.
func prefixTools(connector string, result json.RawMessage) ([]json.RawMessage, error) {
	var list struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(result, &list); err != nil {
		return nil, fmt.Errorf("%w: tools/list result: %v", errUpstreamFailed, err)
	}
	out := make([]json.RawMessage, 0, len(list.Tools))
	for _, t := range list.Tools {
		var name string
		if err := json.Unmarshal(t["name"], &name); err != nil || name == "" {
			return nil, fmt.Errorf("%w: tools/list: a tool without a name", errUpstreamFailed)
		}
		t["name"], _ = json.Marshal(connector + ToolSeparator + name)
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// callPayload is the JSON of a call event's payload (events.payload).
type callPayload struct {
	Tool        string `json:"tool"`
	ConnectorID int64  `json:"connector_id"`
	Outcome     string `json:"outcome"`
	DurationUS  int64  `json:"duration_us"`
	Bytes       int64  `json:"bytes"`
	StartedAt   string `json:"started_at"`
}

// toolsCall forwards a call to the connector its name starts with. An
// upstream failure is a tool result with isError, not a JSON-RPC error;
// only bad params and a failed database write are.
func (s *Server) toolsCall(ctx context.Context, p principal, params json.RawMessage) (json.RawMessage, *rpcError) {
	var cp struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if rerr := decodeParams(params, &cp, false); rerr != nil {
		return nil, rerr
	}
	if cp.Name == "" {
		return nil, newRPCError(CodeInvalidParams, "invalid params: name is required")
	}
	if a := strings.TrimSpace(string(cp.Arguments)); a != "" && a != "null" && a[0] != '{' {
		return nil, newRPCError(CodeInvalidParams, "invalid params: arguments must be a JSON object")
	}
	connName, toolName, _ := strings.Cut(cp.Name, ToolSeparator)
	var conn *connector
	for i := range p.Connectors {
		if p.Connectors[i].Name == connName {
			conn = &p.Connectors[i]
			break
		}
	}
	if conn == nil || toolName == "" {
		return nil, newRPCError(CodeInvalidParams, "unknown tool %q: tools/list names each tool <connector>%s<tool>", cp.Name, ToolSeparator)
	}

	start := time.Now()
	traced := s.trace.sample()
	if d := s.cfg.Faults.CallCPU; d > 0 {
		burnCPU(d)
	}
	if n := s.cfg.Faults.CallLeak; n > 0 {
		leakForever(n)
	}
	var (
		result json.RawMessage
		n      int64
		err    error
	)
	if d := s.cfg.Faults.CallLatency; d > 0 {
		if e := sleepCtx(ctx, d); e != nil {
			err = fmt.Errorf("%w: %v", errCancelled, e)
		}
	}
	if err == nil {
		args := cp.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage(`{}`)
		}
		result, n, err = s.up.rpc(ctx, conn.URL, "tools/call", struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{toolName, args})
	}
	upstreamDur := time.Since(start)
	outcome := schema.OutcomeOK
	switch {
	case errors.Is(err, errCancelled):
		// The client went away (or the drain ran out of time): nothing is
		// recorded, and the answer below is written to no one or to a
		// client that is being cut off.
		s.metrics.call("cancelled")
		return toolError("cancelled: " + err.Error()), nil
	case errors.Is(err, errUpstreamTimeout):
		outcome = schema.OutcomeTimeout
		result = toolError(err.Error())
	case err != nil:
		var upErr *rpcError
		if errors.As(err, &upErr) {
			outcome = schema.OutcomeToolError
		} else {
			outcome = schema.OutcomeUpstreamError
		}
		result = toolError(err.Error())
	default:
		var flag struct {
			IsError bool `json:"isError"`
		}
		if json.Unmarshal(result, &flag) != nil {
			outcome = schema.OutcomeUpstreamError
			result = toolError("the upstream's tools/call result is not a JSON object")
		} else if flag.IsError {
			outcome = schema.OutcomeToolError
		}
	}
	dur := time.Since(start)
	s.metrics.call(outcome)

	rec := callRecord{
		WorkspaceID: p.WorkspaceID, UserID: p.UserID, ConnectorID: conn.ID, Tool: cp.Name,
		StartedAt: start, Duration: dur, Outcome: outcome, Bytes: n,
	}
	payload, _ := json.Marshal(callPayload{
		Tool: cp.Name, ConnectorID: conn.ID, Outcome: outcome, DurationUS: dur.Microseconds(),
		Bytes: n, StartedAt: formatWrittenAt(start),
	})
	if d := s.cfg.Faults.RecordAsync; d > 0 {
		// The planted bug: answered before it is recorded, and the record
		// dropped when the database is slower than d.
		go func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
			defer cancel()
			if _, err := s.store.recordCall(rctx, rec, string(payload)); err != nil {
				s.log.Error("relay: recording a call failed (record-async)", "user_id", p.UserID, "tool", cp.Name, "err", err)
			}
		}()
		return result, nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	recStart := time.Now()
	if _, err := s.store.recordCall(rctx, rec, string(payload)); err != nil {
		s.log.Error("relay: recording a call failed", "user_id", p.UserID, "tool", cp.Name, "err", err)
		return nil, newRPCError(CodeInternalError, "the call ran but could not be recorded: the database failed")
	}
	if traced {
		s.trace.write(ctx, callSpans{start: start, upstream: upstreamDur, record: time.Since(recStart),
			userID: p.UserID, workspace: p.WorkspaceID, tool: cp.Name, outcome: outcome, bytes: n,
			traceID: rand.Text(), sampledAs: s.cfg.CallTrace})
	}
	return result, nil
}

// toolError returns a tools/call result that reports msg as a tool error.
func toolError(msg string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": msg}},
		"isError": true,
	})
	return b
}

// sleepCtx sleeps for d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeRPCResult writes a JSON-RPC success with a raw result, without
// re-encoding it; a stateless-era result gets the relay's serverInfo in
// its _meta (see appendResult).
func writeRPCResult(w http.ResponseWriter, id, result json.RawMessage, stateless bool) {
	n := len(result) + len(id) + 40
	if stateless {
		n += len(serverInfoMember) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = appendResult(b, result, stateless)
	b = append(b, "}\n"...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// writeRPCError writes a JSON-RPC error with the given HTTP status.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, e *rpcError) {
	if id == nil {
		id = nullID
	}
	b, _ := json.Marshal(rpcResponse{JSONRPC: "2.0", ID: id, Error: e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeJSONError writes {"error": msg} with the given HTTP status.
func writeJSONError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// writeJSON writes v as JSON with the given HTTP status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
