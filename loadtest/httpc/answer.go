package httpc

import "bytes"

// answerParser reads an HTTP/1.1 answer from the pieces a non-blocking
// socket gives, in whatever sizes they come: the event loop's reader
// (Loop), which cannot block in the middle of an answer as the pooled
// engine's reader does. It interprets the same fields, through the same
// code (respState), and discards the body, counting its bytes.
type answerParser struct {
	state  int
	st     respState
	code   int
	noBody bool  // the request was HEAD: the answer has no body
	remain int64 // body or chunk bytes still to come
	n      int64 // body bytes so far
	line   []byte
}

// The parser's states.
const (
	apStatus     = iota // the status line
	apFields            // header fields, up to the blank line
	apBody              // remain bytes of body
	apUntilClose        // a body delimited by the end of the connection
	apChunkSize         // a chunk's size line
	apChunkData         // remain bytes of a chunk
	apChunkEnd          // the line break after a chunk
	apTrailer           // trailer fields, up to the blank line
	apDone
)

// maxLine bounds a line of the head or of the chunk framing.
const maxLine = 64 << 10

// reset readies p for the answer to a request; noBody for HEAD.
func (p *answerParser) reset(noBody bool) {
	*p = answerParser{noBody: noBody, line: p.line[:0]}
}

// started reports whether any byte of the answer has come.
func (p *answerParser) started() bool {
	return p.state != apStatus || len(p.line) > 0
}

// feed consumes b and reports how much of it belongs to the answer and
// whether the answer is complete; bytes past a complete answer are not
// its own.
func (p *answerParser) feed(b []byte) (used int, done bool, err error) {
	for used < len(b) && p.state != apDone {
		rest := b[used:]
		switch p.state {
		case apBody, apChunkData:
			k := int64(len(rest))
			if k > p.remain {
				k = p.remain
			}
			p.remain -= k
			p.n += k
			used += int(k)
			if p.remain == 0 {
				if p.state == apBody {
					p.state = apDone
				} else {
					p.state = apChunkEnd
				}
			}
			continue
		case apUntilClose:
			p.n += int64(len(rest))
			return len(b), false, nil
		}
		line, k, ok, err := p.nextLine(rest)
		used += k
		if err != nil {
			return used, false, err
		}
		if !ok {
			break
		}
		if err := p.onLine(trimCRLF(line)); err != nil {
			return used, false, err
		}
	}
	return used, p.state == apDone, nil
}

// eof ends the answer at the end of the connection: complete only when
// its body runs to that end.
func (p *answerParser) eof() bool {
	if p.state == apUntilClose {
		p.state = apDone
	}
	return p.state == apDone
}

// nextLine returns the line that b completes (with what came of it
// before), or keeps b to wait for the rest.
func (p *answerParser) nextLine(b []byte) (line []byte, used int, ok bool, err error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(p.line)+len(b) > maxLine {
			return nil, len(b), false, NewProtocolError("httpc: answer line longer than 64 KiB", b[:min(len(b), 64)])
		}
		p.line = append(p.line, b...)
		return nil, len(b), false, nil
	}
	if len(p.line) == 0 {
		return b[:i+1], i + 1, true, nil
	}
	p.line = append(p.line, b[:i+1]...)
	line = p.line
	p.line = p.line[:0] // the line is used before the next append
	return line, i + 1, true, nil
}

// onLine takes one line of the head or of the chunk framing.
func (p *answerParser) onLine(line []byte) error {
	switch p.state {
	case apStatus:
		code, err := p.st.statusLine(line)
		if err != nil {
			return err
		}
		p.code, p.state = code, apFields
	case apFields:
		if len(line) > 0 {
			return p.st.field(line, nil)
		}
		p.startBody()
	case apChunkSize:
		size, ok := parseChunkSize(line)
		if !ok {
			return NewProtocolError("httpc: malformed chunk size", line)
		}
		if size == 0 {
			p.state = apTrailer
		} else {
			p.state, p.remain = apChunkData, size
		}
	case apChunkEnd:
		if len(line) != 0 {
			return NewProtocolError("httpc: chunk not followed by CRLF", line)
		}
		p.state = apChunkSize
	case apTrailer:
		if len(line) == 0 {
			p.state = apDone
		}
	}
	return nil
}

// startBody decides, at the end of the head, how the body is delimited,
// as readBody does.
func (p *answerParser) startBody() {
	code, st := p.code, &p.st
	switch {
	case code >= 100 && code < 200 && code != 101:
		p.state = apStatus // an interim answer such as 100 Continue: the real one follows
	case p.noBody || code == 204 || code == 304 || code == 101:
		p.state = apDone
	case st.chunked:
		p.state = apChunkSize
	case st.contentLength == 0:
		p.state = apDone
	case st.contentLength > 0:
		p.state, p.remain = apBody, st.contentLength
	default:
		st.keepAlive = false
		p.state = apUntilClose
	}
}
