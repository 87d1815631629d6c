package sse

import "github.com/headroom-dev/headroom/loadtest/httpc"

// dechunker decodes an HTTP/1.1 chunked body incrementally and in place.
type dechunker struct {
	state  uint8
	n      int64 // chunk size being read, then bytes left in the chunk
	digits int
}

const (
	chSize        = iota // reading hex digits of a chunk size
	chExt                // skipping a chunk extension up to CR or LF
	chSizeLF             // CR seen after the size line, LF expected
	chData               // n bytes of chunk data left
	chDataCR             // CRLF after the data expected
	chDataLF             // LF after the data's CR expected
	chTrailer            // at the start of a trailer line (after the last chunk)
	chTrailerLine        // inside a trailer line
	chTrailerLF          // CR of the final blank line seen, LF expected
	chDone               // the body has ended
)

// decode decodes b in place and returns the data bytes it held (a prefix of
// b) and whether the body ended (the last chunk and trailers were read).
func (d *dechunker) decode(b []byte) (out []byte, done bool, err error) {
	w := 0
	for i := 0; i < len(b); {
		c := b[i]
		switch d.state {
		case chSize:
			v, ok := hexVal(c)
			switch {
			case ok:
				if d.digits++; d.digits > 15 {
					return b[:w], false, httpc.NewProtocolError("sse: chunk size too long", b[i:])
				}
				d.n = d.n<<4 | int64(v)
			case d.digits > 0 && (c == ';' || c == ' ' || c == '\t'):
				d.state = chExt
			case d.digits > 0 && c == '\r':
				d.state = chSizeLF
			case d.digits > 0 && c == '\n':
				d.endSizeLine()
			default:
				return b[:w], false, httpc.NewProtocolError("sse: malformed chunk size", b[i:])
			}
			i++
		case chExt:
			switch c {
			case '\r':
				d.state = chSizeLF
			case '\n':
				d.endSizeLine()
			}
			i++
		case chSizeLF:
			if c != '\n' {
				return b[:w], false, httpc.NewProtocolError("sse: chunk size line not ended by CRLF", b[i:])
			}
			d.endSizeLine()
			i++
		case chData:
			k := min(d.n, int64(len(b)-i))
			copy(b[w:], b[i:i+int(k)])
			w += int(k)
			i += int(k)
			if d.n -= k; d.n == 0 {
				d.state = chDataCR
			}
		case chDataCR, chDataLF:
			switch {
			case c == '\r' && d.state == chDataCR:
				d.state = chDataLF
			case c == '\n':
				d.state, d.n, d.digits = chSize, 0, 0
			default:
				return b[:w], false, httpc.NewProtocolError("sse: chunk data not followed by CRLF", b[i:])
			}
			i++
		case chTrailer:
			switch c {
			case '\r':
				d.state = chTrailerLF
			case '\n':
				d.state = chDone
			default:
				d.state = chTrailerLine
			}
			i++
		case chTrailerLine:
			if c == '\n' {
				d.state = chTrailer
			}
			i++
		case chTrailerLF:
			if c != '\n' {
				return b[:w], false, httpc.NewProtocolError("sse: malformed chunked trailer", b[i:])
			}
			d.state = chDone
			i++
		case chDone:
			return b[:w], true, nil
		}
	}
	return b[:w], d.state == chDone, nil
}

func (d *dechunker) endSizeLine() {
	if d.n == 0 {
		d.state = chTrailer
		return
	}
	d.state = chData
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
