package sse_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// serverEnv makes the test binary run as a lean SSE target in another
// process, so that the generator's memory is measured alone and the fd
// budget of each process holds 10,000 connections.
const serverEnv = "HEADROOM_SSE_TEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(serverEnv) == "1" {
		runServer()
		return
	}
	os.Exit(m.Run())
}

// runServer accepts streams on a loopback port: for each it reads the
// request head, answers 200 text/event-stream (chunked) with one "hello"
// event and holds the connection until the client closes it. It prints its
// address and exits when stdin closes.
func runServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ev := "event: hello\ndata: {}\n\n"
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		fmt.Sprintf("%x\r\n%s\r\n", len(ev), ev))
	go func() {
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
	}()
	fmt.Println(ln.Addr().String())
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent exits
	os.Exit(0)
}

// startServerProcess re-executes the test binary as the target and returns
// its address; the process is killed by PID at cleanup.
func startServerProcess(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), serverEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("server process: %v", err)
	}
	return strings.TrimSpace(line)
}
