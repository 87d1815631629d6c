package sse

import "sync"

// readBufs lends streams their read buffers, by size: a held stream
// borrows one only while it reads (see Stream.readBody), so that idle
// streams hold none.
var readBufs sync.Map // int → *sync.Pool of *[]byte

func (s *Stream) borrowBuf() {
	if s.bufp != nil {
		return
	}
	size := s.g.cfg.BufferSize
	p, ok := readBufs.Load(size)
	if !ok {
		p, _ = readBufs.LoadOrStore(size, &sync.Pool{New: func() any { b := make([]byte, size); return &b }})
	}
	s.bufp = p.(*sync.Pool).Get().(*[]byte)
	s.buf = *s.bufp
}

func (s *Stream) giveBackBuf() {
	if s.bufp == nil {
		return
	}
	if p, ok := readBufs.Load(len(*s.bufp)); ok {
		p.(*sync.Pool).Put(s.bufp)
	}
	s.buf, s.bufp = nil, nil
}
