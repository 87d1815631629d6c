package mockupstream

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// emptyResult is the result of ping.
var emptyResult = []byte("{}")

// serveRPC serves one MCP-style JSON-RPC 2.0 request on POST / or /mcp.
// JSON-RPC errors are answered with HTTP 200 and at once; a notification
// (no id) is acknowledged with 202 and no body.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	s.stats.begin()
	if !s.authorized(r) {
		s.reject(w, KindOther, http.StatusUnauthorized, "missing or wrong bearer token: send Authorization: Bearer <token>", start)
		return
	}
	if v := r.Header.Get(versionHeader); v != "" && !slices.Contains(supportedVersions, v) {
		// "If the server receives a request with an invalid or unsupported
		// MCP-Protocol-Version, it MUST respond with 400 Bad Request"
		// (transports, revisions from 2025-06-18 on).
		s.reject(w, KindOther, http.StatusBadRequest, "unsupported "+versionHeader+" "+strconv.Quote(v)+": this upstream speaks "+strings.Join(supportedVersions, ", "), start)
		return
	}
	body, ok := s.readBody(w, r, KindOther, start)
	if !ok {
		return
	}
	m := s.model.Load()
	req, id, rerr := parseRPC(body)
	if rerr != nil {
		s.answerNow(w, KindOther, RPCError, errorReply(id, rerr), start)
		return
	}
	if req.id == nil {
		s.end(KindNotification, OK, 0, start)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var (
		k       Kind
		version string
	)
	switch req.method {
	case "initialize":
		k = KindInitialize
		version, rerr = parseObjectParams(req.method, req.params)
	case "tools/list":
		k = KindList
		_, rerr = parseObjectParams(req.method, req.params)
	case "tools/call":
		k = KindCall
		_, rerr = parseCallParams(req.params, m.b.ToolCount)
	case "ping":
		s.answerNow(w, KindPing, OK, resultReply(req.id, emptyResult), start)
		return
	default:
		s.answerNow(w, KindOther, RPCError, errorReply(req.id, &rpcError{CodeMethodNotFound, "method not found: " + req.method + "; this upstream serves initialize, tools/list, tools/call and ping"}), start)
		return
	}
	if rerr != nil {
		s.answerNow(w, k, RPCError, errorReply(req.id, rerr), start)
		return
	}
	d := m.Draw(k, m.Next())
	rep := s.faultReply(m, d.Outcome)
	if rep == nil {
		switch k {
		case KindInitialize:
			rep = resultReply(req.id, initializeResult(version))
		case KindList:
			rep = resultReply(req.id, m.toolsJSON)
		default:
			rep = callReply(req.id, d)
		}
	}
	s.deliver(w, r, k, d, rep, start)
}

// answerNow writes rep at once and counts the request with outcome o.
func (s *Server) answerNow(w http.ResponseWriter, k Kind, o Outcome, rep *reply, start time.Time) {
	s.write(w, k, o, rep, start)
}
