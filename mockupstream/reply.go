package mockupstream

import (
	"net"
	"net/http"
	"strconv"
	"time"
)

// reply is an HTTP answer prepared when its request is read and written
// when its delay has passed: through the http.ResponseWriter, or straight to
// a parked connection as raw HTTP/1.1. Its body is head, then fill bytes of
// filler text, then tail; the filler is shared and never copied.
type reply struct {
	status      int
	contentType string
	head        []byte
	fill        int64
	tail        []byte
	headOnly    bool // a HEAD request: headers only
}

// filler is the text that pads answers to their drawn size: printable ASCII
// with no quote or backslash, so it can sit inside a JSON string.
var filler = func() []byte {
	const line = "The quick brown fox jumps over the lazy dog; mockupstream filler text 0123456789. "
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = line[i%len(line)]
	}
	return b
}()

// bodyLen returns the body's length in bytes.
func (r *reply) bodyLen() int64 {
	return int64(len(r.head)) + r.fill + int64(len(r.tail))
}

// appendBody appends the body's pieces to bufs: head, filler slices, tail.
func (r *reply) appendBody(bufs net.Buffers) net.Buffers {
	if len(r.head) > 0 {
		bufs = append(bufs, r.head)
	}
	for n := r.fill; n > 0; {
		k := min(n, int64(len(filler)))
		bufs = append(bufs, filler[:k])
		n -= k
	}
	if len(r.tail) > 0 {
		bufs = append(bufs, r.tail)
	}
	return bufs
}

// writeTo writes the reply through w and returns the body bytes written.
func (r *reply) writeTo(w http.ResponseWriter) (int64, error) {
	h := w.Header()
	if r.contentType != "" {
		h.Set("Content-Type", r.contentType)
	}
	n := r.bodyLen()
	h.Set("Content-Length", strconv.FormatInt(n, 10))
	w.WriteHeader(r.status)
	if r.headOnly || n == 0 {
		return 0, nil
	}
	var written int64
	for _, b := range r.appendBody(make(net.Buffers, 0, 4)) {
		k, err := w.Write(b)
		written += int64(k)
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// writeRaw writes the reply as an HTTP/1.1 response to conn; with close set
// it asks the client to close the connection. It returns the body bytes
// written.
func (r *reply) writeRaw(conn net.Conn, close bool) (int64, error) {
	n := r.bodyLen()
	hdr := make([]byte, 0, 160)
	hdr = append(hdr, "HTTP/1.1 "...)
	hdr = strconv.AppendInt(hdr, int64(r.status), 10)
	hdr = append(hdr, ' ')
	hdr = append(hdr, http.StatusText(r.status)...)
	hdr = append(hdr, "\r\nDate: "...)
	hdr = time.Now().UTC().AppendFormat(hdr, http.TimeFormat)
	if r.contentType != "" {
		hdr = append(hdr, "\r\nContent-Type: "...)
		hdr = append(hdr, r.contentType...)
	}
	hdr = append(hdr, "\r\nContent-Length: "...)
	hdr = strconv.AppendInt(hdr, n, 10)
	if close {
		hdr = append(hdr, "\r\nConnection: close"...)
	}
	hdr = append(hdr, "\r\n\r\n"...)
	bufs := net.Buffers{hdr}
	if !r.headOnly {
		bufs = r.appendBody(bufs)
	}
	written, err := bufs.WriteTo(conn)
	return max(0, min(written-int64(len(hdr)), n)), err
}
