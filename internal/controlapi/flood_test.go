package controlapi

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/controlapi/api"
)

// startTLS serves e.srv on a TLS listener on 127.0.0.1 and returns its
// address and a client config that trusts it.
func startTLS(t *testing.T, e *env) (string, *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM := selfSigned(t)
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, keyPEM, 0o600)
	ln, err := ListenTLS("127.0.0.1:0", certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "localhost"}
}

// flood opens n connections with dial and holds them open, idle, until the
// test ends. Dial errors are ignored: the server may shed some.
func flood(t *testing.T, n int, dial func() (net.Conn, error)) {
	t.Helper()
	var mu sync.Mutex
	var held []net.Conn
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			nc, err := dial()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, nc)
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, nc := range held {
			nc.Close()
		}
	})
}

// TestPreAuthFloodDoesNotLockOutOperator is the attack of issue 10 §3:
// strangers open hundreds of TCP connections that never finish TLS or never
// say auth.hello, and a local process does the same on the unix socket,
// with the default limits. The operator already connected keeps working, a
// new operator connection on the unix socket gets in and works, and so does
// a device over TLS.
func TestPreAuthFloodDoesNotLockOutOperator(t *testing.T) {
	e := newEnv(t, nil)
	addr, tlsCfg := startTLS(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	early := e.dial("op")

	const n = 300
	d := net.Dialer{Timeout: 2 * time.Second}
	// TCP connections that never start TLS.
	flood(t, n/2, func() (net.Conn, error) { return d.Dial("tcp", addr) })
	// TLS connections that complete the handshake and never say hello.
	flood(t, n/2, func() (net.Conn, error) {
		return tls.DialWithDialer(&d, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	})
	// Idle connections on the unix socket.
	flood(t, n, func() (net.Conn, error) { return d.Dial("unix", e.sock) })

	for i := range 20 {
		c, err := Dial(ctx, e.sock, e.tokens["op"])
		if err != nil {
			t.Fatalf("operator dial %d during the flood: %v", i, err)
		}
		if err := c.Call(ctx, api.Ping.Name(), nil, nil); err != nil {
			t.Fatalf("operator call %d during the flood: %v", i, err)
		}
		c.Close()
		if err := early.Call(ctx, api.Ping.Name(), nil, nil); err != nil {
			t.Fatalf("operator connected before the flood: %v", err)
		}
	}
	dev, err := DialTLS(ctx, addr, e.tokens["phone"], tlsCfg)
	if err != nil {
		t.Fatalf("device over TLS during the flood: %v", err)
	}
	defer dev.Close()
	if err := dev.Call(ctx, api.Ping.Name(), nil, nil); err != nil {
		t.Fatal(err)
	}
}

// preAuth reports the pre-auth connections across listeners.
func (s *Server) preAuthTotal() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	seen := map[*budget]bool{}
	n := 0
	for c := range s.conns {
		if c.budget != nil && !seen[c.budget] {
			seen[c.budget] = true
			n += c.budget.preAuthCount()
		}
	}
	return n
}

// TestPreAuthCapAndDeadline checks the two bounds on strangers: at most
// MaxPreAuth idle pre-auth connections per listener stay open, and each is
// closed at HelloTimeout whether it stalled in the TLS handshake or before
// auth.hello.
func TestPreAuthCapAndDeadline(t *testing.T) {
	closed := make(chan string, 1024)
	e := newEnv(t, func(o *Options) {
		o.HelloTimeout = 2 * time.Second // long enough for all 40 to be accepted first
		o.MaxPreAuth = 8
		o.MaxPreAuthPerHost = 4
		o.OnClose = func(r string) { closed <- r }
	})
	addr, _ := startTLS(t, e)
	d := net.Dialer{Timeout: 2 * time.Second}
	flood(t, 20, func() (net.Conn, error) { return d.Dial("tcp", addr) })
	flood(t, 20, func() (net.Conn, error) { return d.Dial("unix", e.sock) })
	// Evicted connections leave asynchronously; wait for the count to settle.
	reasons := map[string]int{}
	deadline := time.After(10 * time.Second)
	for got := 0; got < 40; got++ {
		select {
		case r := <-closed:
			reasons[r]++
		case <-deadline:
			t.Fatalf("only %d of 40 stranger connections closed: %v", got, reasons)
		}
	}
	// 4 TCP (per-host cap) and 8 unix (listener cap) survive until the
	// deadline; the rest make room.
	if reasons["preauth_evicted"] != 16+12 || reasons["hello_timeout"] != 4+8 {
		t.Fatalf("close reasons %v", reasons)
	}
	if n := e.srv.preAuthTotal(); n != 0 {
		t.Fatalf("%d pre-auth connections left", n)
	}
}

// TestListenerBudgetsAreSeparate fills the unix socket with authenticated
// operator connections; a device on TLS still gets in, and the unix
// socket refuses only its own overflow.
func TestListenerBudgetsAreSeparate(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxConns = 2 })
	addr, tlsCfg := startTLS(t, e)
	e.dial("op")
	e.dial("op")
	if _, err := Dial(context.Background(), e.sock, e.tokens["op"]); code(err) != CodeUnavailable {
		t.Fatalf("third on the unix socket: %v", err)
	}
	dev, err := DialTLS(context.Background(), addr, e.tokens["phone"], tlsCfg)
	if err != nil {
		t.Fatalf("TLS listener shares the unix socket's budget: %v", err)
	}
	dev.Close()
}

// BenchmarkDialHello measures a new unix-socket connection through the
// listener budget: accept, auth.hello, close.
func BenchmarkDialHello(b *testing.B) {
	e := newEnv(b, func(o *Options) { o.OnClose = nil })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, err := Dial(ctx, e.sock, e.tokens["op"])
		if err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}
