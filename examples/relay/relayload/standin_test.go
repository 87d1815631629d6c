package relayload_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-dev/headroom/internal/childserver"
	"github.com/headroom-dev/headroom/loadtest/mcp"
)

// The stand-in gateway: a lean, relay-shaped MCP gateway served over TLS
// from a child process (see TestMain), for measuring what the generator's
// modeled users cost the generator itself.
const (
	standInName = "mcp-gateway"
	// Child environment: the certificate chain and key (PEM) the parent
	// made, and the median tools/call latency.
	envCert    = "HEADROOM_STANDIN_CERT"
	envKey     = "HEADROOM_STANDIN_KEY"
	envLatency = "HEADROOM_STANDIN_LATENCY"
)

// standInTLS is a certificate chain made by the test, shaped like Caddy's
// internal CA: a root (trusted by the client through RootCAPEM), an
// intermediate and a leaf for 127.0.0.1, all ECDSA P-256; the server sends
// the leaf and the intermediate.
type standInTLS struct {
	caPEM, chainPEM, keyPEM []byte
}

func newStandInTLS(tb testing.TB) standInTLS {
	tb.Helper()
	now := time.Now()
	mk := func(tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			tb.Fatal(err)
		}
		tmpl.SerialNumber = big.NewInt(now.UnixNano())
		tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Hour), now.Add(24*time.Hour)
		if parent == nil {
			parent, parentKey = tmpl, key
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
		if err != nil {
			tb.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			tb.Fatal(err)
		}
		return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	}
	ca := func(name string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	}
	root, rootKey, rootPEM := mk(ca("headroom stand-in root"), nil, nil)
	mid, midKey, midPEM := mk(ca("headroom stand-in intermediate"), root, rootKey)
	_, leafKey, leafPEM := mk(&x509.Certificate{Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, mid, midKey)
	der, err := x509.MarshalECPrivateKey(leafKey)
	if err != nil {
		tb.Fatal(err)
	}
	return standInTLS{
		caPEM:    rootPEM,
		chainPEM: append(leafPEM, midPEM...),
		keyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
	}
}

// startStandIn starts the stand-in gateway in a child process and returns
// its address. latency is the median of a tools/call.
func startStandIn(tb testing.TB, certs standInTLS, latency time.Duration) string {
	return childserver.Start(tb, standInName,
		envCert+"="+string(certs.chainPEM), envKey+"="+string(certs.keyPEM), envLatency+"="+latency.String())
}

// standIn is the gateway: what the relay does for the gateway workload,
// with its answers' sizes.
//
//   - POST /mcp: initialize (an Mcp-Session-Id), notifications/initialized
//     (202), tools/list (the relay's list for a user of five connectors of
//     twenty tools each: 100 tools with description and schema, about 36 KB),
//     tools/call (after the call's latency — log-normal, p95 ten times the
//     median, capped at 40 times — 8% tool errors, answers of 4 KiB ± 2 KiB
//     with 2% around 1 MiB, as mockupstream.Calibrated; announced on the
//     user's stream before the answer, as the relay does);
//   - GET /mcp (Accept: text/event-stream): the user's notification stream,
//     chunked, a keepalive comment every 15 s, one event per completed call;
//   - GET /api/dashboard: a 6 KiB JSON page;
//   - GET /stats: the counters below, for the parent to see the run.
type standIn struct {
	tools     []byte
	dashboard []byte
	filler    string
	latency   time.Duration

	mu      sync.Mutex
	streams map[string]map[chan struct{}]bool // by bearer token

	open, calls, requests, events atomic.Int64
}

// standInStats is what GET /stats answers.
type standInStats struct {
	Streams  int64 `json:"streams"`
	Calls    int64 `json:"calls"`
	Requests int64 `json:"requests"`
	Events   int64 `json:"events"`
}

func newStandIn(latency time.Duration) *standIn {
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	const schema = `{"type":"object","properties":{"query":{"type":"string","description":"Free text; the mock ignores it."},"limit":{"type":"integer","minimum":1,"description":"Ignored."}},"required":["query"]}`
	var tools []tool
	for c := 1; c <= 5; c++ {
		for i := 1; i <= 20; i++ {
			tools = append(tools, tool{
				Name:        fmt.Sprintf("connector_%d__tool_%02d", c, i),
				Description: fmt.Sprintf("Mock tool %d of 20: answers after the configured latency with text of the configured size.", i),
				InputSchema: json.RawMessage(schema),
			})
		}
	}
	list, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		panic(err)
	}
	usage := make([]map[string]any, 0, 60)
	for d := range 60 {
		usage = append(usage, map[string]any{"day": fmt.Sprintf("2026-01-%02d", d%28+1), "calls": 1000 + d, "errors": d, "p95_ms": 1200 + d})
	}
	dash, err := json.Marshal(map[string]any{"workspace": 1, "usage": usage})
	if err != nil {
		panic(err)
	}
	return &standIn{tools: list, dashboard: dash, filler: strings.Repeat("x", 1<<20+64<<10), latency: latency,
		streams: map[string]map[chan struct{}]bool{}}
}

func serveStandIn(ln net.Listener) {
	cert, err := tls.X509KeyPair([]byte(os.Getenv(envCert)), []byte(os.Getenv(envKey)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stand-in:", err)
		os.Exit(1)
	}
	latency, err := time.ParseDuration(os.Getenv(envLatency))
	if err != nil {
		fmt.Fprintln(os.Stderr, "stand-in:", err)
		os.Exit(1)
	}
	srv := &http.Server{
		Handler:           newStandIn(latency),
		ReadHeaderTimeout: time.Minute,
		IdleTimeout:       5 * time.Minute, // Caddy's default
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
		ErrorLog:          log.New(io.Discard, "", 0), // handshakes the parent's exit cuts short
	}
	_ = srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}))
}

func (s *standIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Server", "Caddy")
	switch {
	case r.URL.Path == "/stats":
		_ = json.NewEncoder(w).Encode(standInStats{Streams: s.open.Load(), Calls: s.calls.Load(), Requests: s.requests.Load(), Events: s.events.Load()})
		return
	case r.URL.Path == "/api/dashboard":
		s.requests.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.dashboard)
		return
	case r.URL.Path != "/mcp":
		http.NotFound(w, r)
		return
	}
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if r.Method == http.MethodGet {
		s.stream(w, r, token)
		return
	}
	s.requests.Add(1)
	req, ok := readRPC(w, r)
	if !ok {
		return
	}
	reply := func(result string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
	}
	switch req.Method {
	case "initialize":
		w.Header().Set(mcp.SessionHeader, fmt.Sprintf("%032x", mrand.Uint64()))
		reply(`{"protocolVersion":"` + mcp.DefaultProtocolVersion + `","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"relay","version":"0.1.0"}}`)
	case "notifications/initialized":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		reply(string(s.tools))
	case "tools/call":
		s.calls.Add(1)
		if !sleepLogNormal(r, s.latency) {
			return
		}
		size, isError := 4<<10+mrand.IntN(4<<10)-2<<10, mrand.Float64() < 0.08
		if mrand.Float64() < 0.02 {
			size = 1<<20 + mrand.IntN(128<<10) - 64<<10
		}
		s.announce(token)
		text := s.filler[:size]
		if isError {
			text = "the upstream tool failed"
		}
		reply(`{"content":[{"type":"text","text":"` + text + `"}],"isError":` + strconv.FormatBool(isError) + `}`)
	default:
		http.Error(w, "unknown method", http.StatusBadRequest)
	}
}

// sleepLogNormal waits a log-normal time with median m and p95 10·m,
// capped at 40·m; false when the client left.
func sleepLogNormal(r *http.Request, m time.Duration) bool {
	if m <= 0 {
		return true
	}
	sigma := math.Log(10) / 1.645
	d := time.Duration(float64(m) * math.Min(math.Exp(sigma*mrand.NormFloat64()), 40))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *standIn) announce(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.streams[token] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (s *standIn) stream(w http.ResponseWriter, r *http.Request, token string) {
	ch := make(chan struct{}, 64)
	s.mu.Lock()
	if s.streams[token] == nil {
		s.streams[token] = map[chan struct{}]bool{}
	}
	s.streams[token][ch] = true
	s.mu.Unlock()
	s.open.Add(1)
	defer func() {
		s.open.Add(-1)
		s.mu.Lock()
		delete(s.streams[token], ch)
		if len(s.streams[token]) == 0 {
			delete(s.streams, token)
		}
		s.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	if _, err := fmt.Fprint(w, ": connected\n\n"); err != nil || rc.Flush() != nil {
		return
	}
	const keepalive = 15 * time.Second
	t := time.NewTimer(time.Duration(mrand.Int64N(int64(keepalive))) + 1) // spread over the interval, as the relay's shards do
	defer t.Stop()
	user := strings.TrimPrefix(token, "user-")
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			t.Reset(keepalive)
			_, err = fmt.Fprint(w, ": keepalive\n\n")
		case <-ch:
			id := s.events.Add(1)
			_, err = fmt.Fprintf(w, "id: %d\nevent: tool_call\ndata: {\"id\":%d,\"workspace_id\":1,\"user_id\":%s,\"kind\":\"tool_call\",\"written_at\":%q,\"status\":\"ok\"}\n\n",
				id, id, user, time.Now().UTC().Format(time.RFC3339Nano))
		}
		if err != nil || rc.Flush() != nil {
			return
		}
	}
}
