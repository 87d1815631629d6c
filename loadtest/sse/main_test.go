package sse_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"testing"

	"github.com/headroom-dev/headroom/internal/childserver"
)

// The memory tests' target runs in another process, so that the
// generator's memory is measured alone and each process's fd budget holds
// 10,000 connections.
func TestMain(m *testing.M) {
	childserver.Main(map[string]childserver.Serve{"sse": serveStreams})
	os.Exit(m.Run())
}

func startServerProcess(tb testing.TB) string { return childserver.Start(tb, "sse") }

// serveStreams accepts streams on ln: for each it reads the request head,
// answers 200 text/event-stream (chunked) with one "hello" event and holds
// the connection until the client closes it.
func serveStreams(ln net.Listener) {
	ev := "event: hello\ndata: {}\n\n"
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n", len(ev), ev))
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			br := bufio.NewReaderSize(c, 1024)
			for {
				l, err := br.ReadSlice('\n')
				if err != nil {
					return
				}
				if len(l) <= 2 {
					break
				}
			}
			if _, err := c.Write(resp); err != nil {
				return
			}
			var b [64]byte
			for {
				if _, err := c.Read(b[:]); err != nil {
					return
				}
			}
		}()
	}
}
