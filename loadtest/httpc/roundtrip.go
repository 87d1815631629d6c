package httpc

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/headroom-dev/headroom/loadtest"
)

// roundTrip writes r on cn and reads the answer. keep says whether cn can
// serve another request; stale says that cn was a reused connection that
// the server had closed before any byte of the answer (safe to resend).
func (cn *conn) roundTrip(r *Request, call *Call, maxBody int) (resp loadtest.Response, keep, stale bool) {
	body := r.body
	if call != nil && call.Body != nil {
		body = call.Body
	}
	hasBody := body != nil || r.Method == "POST" || r.Method == "PUT" || r.Method == "PATCH"
	b := appendHead(cn.wbuf[:0], r, call)
	b = appendTail(b, call, len(body), hasBody)
	var err error
	if len(b)+len(body) <= cap(b) {
		b = append(b, body...)
		err = cn.send(b)
	} else if _, err = cn.nc.Write(b); err == nil {
		err = cn.send(body)
	}
	if cap(b) <= 4*cap(cn.wbuf) || cap(cn.wbuf) == 0 {
		cn.wbuf = b[:0]
	}
	if err != nil {
		return ErrorResponse(err), false, cn.reused && isClosedConn(err)
	}

	var st respState
	code, err := cn.readHead(r, call, &st)
	if err != nil {
		return ErrorResponse(err), false, cn.reused && st.nothingRead && isClosedConn(err)
	}
	n, err := cn.readBody(r, call, code, &st, maxBody)
	if err != nil {
		resp = ErrorResponse(err)
		resp.Bytes = n
		var pe *ProtocolError
		// A body over the limit was read to its end: the connection is fine.
		return resp, errors.As(err, &pe) && pe == errBodyTooLarge && st.keepAlive, false
	}
	return r.answer(code, n), st.keepAlive, false
}

// send writes the last bytes of a request: on a raw connection it also
// waits for the answer to be readable (see rawConn.send).
func (cn *conn) send(p []byte) error {
	if cn.raw == nil {
		_, err := cn.nc.Write(p)
		return err
	}
	n, err := cn.raw.send(p)
	if err == nil && n < len(p) { // the socket was full: the rest as usual
		_, err = cn.nc.Write(p[n:])
	}
	return err
}

// respState is what the head of an answer says about its body.
type respState struct {
	contentLength int64 // -1 when absent
	chunked       bool
	keepAlive     bool
	nothingRead   bool
}

var (
	errBodyTooLarge = &ProtocolError{Msg: "httpc: response body exceeds MaxBodySize; raise Options.MaxBodySize"}
)

// readHead reads the status line and header fields, skipping interim 1xx
// answers, and returns the status code.
func (cn *conn) readHead(r *Request, call *Call, st *respState) (int, error) {
	br := cn.br
	st.nothingRead = true
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return 0, NewProtocolError("httpc: status line longer than the read buffer", line)
			}
			if len(line) > 0 {
				st.nothingRead = false
			}
			return 0, err
		}
		st.nothingRead = false
		code, err := st.statusLine(line)
		if err != nil {
			return 0, err
		}
		if err := cn.readFields(call, st); err != nil {
			return 0, err
		}
		if code >= 100 && code < 200 && code != 101 {
			continue // interim answer such as 100 Continue
		}
		return code, nil
	}
}

func (cn *conn) readFields(call *Call, st *respState) error {
	br := cn.br
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A header longer than the buffer: none we interpret is, so
			// skip to its end.
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			if err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		line = trimCRLF(line)
		if len(line) == 0 {
			return nil
		}
		if err := st.field(line, call); err != nil {
			return err
		}
	}
}

// statusLine parses an answer's status line ("HTTP/1.1 200 OK") into its
// code, and resets st for the header fields that follow.
func (st *respState) statusLine(line []byte) (int, error) {
	if len(line) < 12 || string(line[:7]) != "HTTP/1." || line[8] != ' ' || line[12] != ' ' && line[12] != '\r' && line[12] != '\n' {
		return 0, NewProtocolError("httpc: malformed status line", line)
	}
	code := 0
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return 0, NewProtocolError("httpc: malformed status line", line)
		}
		code = code*10 + int(c-'0')
	}
	st.keepAlive = line[7] == '1'
	st.contentLength = -1
	st.chunked = false
	return code, nil
}

// field interprets one header field line (without its line break): the
// framing fields into st, and the call's captured ones into call.
func (st *respState) field(line []byte, call *Call) error {
	i := indexByte(line, ':')
	if i <= 0 {
		return NewProtocolError("httpc: malformed header line", line)
	}
	name, value := line[:i], trimSpace(line[i+1:])
	switch l := len(name); {
	case l != len("Content-Length") && l != len("Transfer-Encoding") && l != len("Connection"):
		// Not one this reader interprets: most of an answer's fields.
	case equalFold(name, "Content-Length"):
		n, ok := parseDec(value)
		if !ok {
			return NewProtocolError("httpc: malformed Content-Length", value)
		}
		st.contentLength = n
	case equalFold(name, "Transfer-Encoding"):
		st.chunked = containsFold(value, "chunked")
	case equalFold(name, "Connection"):
		if containsFold(value, "close") {
			st.keepAlive = false
		} else if containsFold(value, "keep-alive") {
			st.keepAlive = true
		}
	}
	if call != nil {
		for j, want := range call.Capture {
			if equalFold(name, want) {
				call.Captured[j] = string(value)
			}
		}
	}
	return nil
}

// readBody reads (and keeps or discards) the body and returns its length.
func (cn *conn) readBody(r *Request, call *Call, code int, st *respState, maxBody int) (int64, error) {
	if call != nil {
		call.Status = code
	}
	if r.noBody || code == 204 || code == 304 || (code >= 100 && code < 200) {
		return 0, nil
	}
	keep := call != nil && call.KeepBody
	if st.chunked {
		return cn.readChunked(call, keep, maxBody)
	}
	if st.contentLength >= 0 {
		return cn.readN(call, keep, st.contentLength, maxBody)
	}
	// Delimited by the end of the connection.
	st.keepAlive = false
	n, err := cn.readN(call, keep, 1<<62, maxBody)
	if err == io.ErrUnexpectedEOF {
		err = nil
	}
	return n, err
}

// readN reads n body bytes, appending them to call.RespBody when keep.
func (cn *conn) readN(call *Call, keep bool, n int64, maxBody int) (int64, error) {
	if !keep {
		var done int64
		for n > 0 {
			step := n
			if step > 1<<30 {
				step = 1 << 30
			}
			d, err := cn.br.Discard(int(step))
			done += int64(d)
			n -= int64(d)
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return done, err
			}
		}
		return done, nil
	}
	var done int64
	for n > 0 {
		if len(call.RespBody) >= maxBody {
			d, err := cn.readN(call, false, n, maxBody)
			if err != nil {
				return done + d, err
			}
			return done + d, errBodyTooLarge
		}
		room := int64(maxBody - len(call.RespBody))
		step := min(n, room, int64(cn.br.Size()))
		b := call.RespBody
		if cap(b)-len(b) < int(step) {
			nb := make([]byte, len(b), max(2*cap(b), len(b)+int(step)))
			copy(nb, b)
			b = nb
		}
		m, err := io.ReadFull(cn.br, b[len(b):len(b)+int(step)])
		call.RespBody = b[:len(b)+m]
		done += int64(m)
		n -= int64(m)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return done, err
		}
	}
	return done, nil
}

func (cn *conn) readChunked(call *Call, keep bool, maxBody int) (int64, error) {
	var total int64
	for {
		line, err := cn.br.ReadSlice('\n')
		if err != nil {
			if err == bufio.ErrBufferFull {
				return total, NewProtocolError("httpc: chunk size line too long", line)
			}
			return total, err
		}
		size, ok := parseChunkSize(trimCRLF(line))
		if !ok {
			return total, NewProtocolError("httpc: malformed chunk size", line)
		}
		if size == 0 {
			// Trailer fields up to the blank line.
			for {
				line, err := cn.br.ReadSlice('\n')
				if err != nil {
					return total, err
				}
				if len(trimCRLF(line)) == 0 {
					return total, nil
				}
			}
		}
		n, err := cn.readN(call, keep, size, maxBody)
		total += n
		if err != nil && err != errBodyTooLarge {
			return total, err
		}
		tooLarge := err == errBodyTooLarge
		crlf, err := cn.br.ReadSlice('\n')
		if err != nil {
			return total, err
		}
		if len(trimCRLF(crlf)) != 0 {
			return total, NewProtocolError("httpc: chunk not followed by CRLF", crlf)
		}
		if tooLarge {
			// Keep reading to the end so the connection stays usable.
			rest, err := cn.readChunked(call, false, maxBody)
			total += rest
			if err != nil {
				return total, err
			}
			return total, errBodyTooLarge
		}
	}
}

func isClosedConn(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

func trimCRLF(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold reports whether b equals s, ignoring ASCII case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

// containsFold reports whether b contains s, ignoring ASCII case.
func containsFold(b []byte, s string) bool {
	for i := 0; i+len(s) <= len(b); i++ {
		if equalFold(b[i:i+len(s)], s) {
			return true
		}
	}
	return false
}

func parseDec(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

func parseChunkSize(b []byte) (int64, bool) {
	if i := indexByte(b, ';'); i >= 0 {
		b = b[:i]
	}
	b = trimSpace(b)
	if len(b) == 0 || len(b) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		var d byte
		switch {
		case '0' <= c && c <= '9':
			d = c - '0'
		case 'a' <= c && c <= 'f':
			d = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, false
		}
		n = n<<4 | int64(d)
	}
	return n, true
}
