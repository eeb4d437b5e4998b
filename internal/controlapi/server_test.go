package controlapi

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/eventlog"
)

func code(err error) int {
	var re *RPCError
	if errors.As(err, &re) {
		return re.Code
	}
	if err != nil {
		return -1
	}
	return 0
}

func TestAuthPerRole(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	take := map[string]any{"conversation": "cli:1"}
	cases := []struct {
		who    string
		method string
		params any
		want   int
	}{
		{"op", api.Ping.Name(), nil, 0},
		{"op", api.ControlTake.Name(), take, 0},
		{"op", "test.operator_only", nil, 0},
		{"phone", api.Ping.Name(), nil, 0},
		{"phone", api.ControlTake.Name(), take, 0},
		{"phone", "test.operator_only", nil, CodeForbidden},
		{"tablet", api.Ping.Name(), nil, 0},
		{"tablet", api.EventsTail.Name(), nil, 0},
		{"tablet", api.ControlTake.Name(), take, CodeForbidden},
		{"tablet", api.ControlRelease.Name(), take, CodeForbidden},
		{"tablet", "test.operator_only", nil, CodeForbidden},
		{"ci", api.Whoami.Name(), nil, 0},
		{"ci", api.ControlTake.Name(), take, CodeForbidden},
		{"ci", "test.operator_only", nil, CodeForbidden},
	}
	for _, tc := range cases {
		t.Run(tc.who+"/"+tc.method, func(t *testing.T) {
			c := e.dial(tc.who)
			err := c.Call(ctx, tc.method, tc.params, nil)
			if got := code(err); got != tc.want {
				t.Fatalf("code %d (%v), want %d", got, err, tc.want)
			}
		})
	}
	var who auth.Principal
	if err := e.dial("tablet").Call(ctx, api.Whoami.Name(), nil, &who); err != nil || who.Name != "tablet" || !who.ReadOnly {
		t.Fatalf("whoami: %+v %v", who, err)
	}
	if _, err := Dial(ctx, e.sock, "rvn_bogus"); code(err) != CodeUnauthorized {
		t.Fatalf("bad token dial: %v", err)
	}
	// A call before auth.hello is refused.
	rc := e.raw("")
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	if m := rc.recv(); m.Error == nil || m.Error.Code != CodeUnauthorized {
		t.Fatalf("call before hello: %+v", m)
	}
}

func TestRevokeAndRotateOnOpenConnection(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	phone, tablet := e.dial("phone"), e.dial("tablet")
	for _, c := range []*Client{phone, tablet} {
		if err := c.Call(ctx, api.Ping.Name(), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.store.Revoke(ctx, "phone"); err != nil {
		t.Fatal(err)
	}
	err := phone.Call(ctx, api.Ping.Name(), nil, nil)
	if code(err) != CodeUnauthorized || !strings.Contains(err.Error(), "revoked") {
		t.Fatalf("revoked call: %v", err)
	}
	newTok, err := e.store.Rotate(ctx, "tablet")
	if err != nil {
		t.Fatal(err)
	}
	if err := tablet.Call(ctx, api.Ping.Name(), nil, nil); code(err) != CodeUnauthorized {
		t.Fatalf("rotated-away token: %v", err)
	}
	// The same connection may switch to the new token.
	var hello HelloResult
	if err := tablet.Call(ctx, api.Hello.Name(), map[string]string{"token": newTok}, &hello); err != nil || hello.Principal.Generation != 2 {
		t.Fatalf("re-hello: %+v %v", hello, err)
	}
	if err := tablet.Call(ctx, api.Ping.Name(), nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestBadFrames(t *testing.T) {
	e := newEnv(t, nil)
	rc := e.raw("op")
	long := strings.Repeat("x", DefaultLimits().MaxString+1)
	cases := []struct {
		name  string
		frame string
		id    string
		code  int
	}{
		{"not json", `{"jsonrpc":`, "null", CodeParseError},
		{"garbage", `hello`, "null", CodeParseError},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, "null", CodeInvalidRequest},
		{"wrong version", `{"jsonrpc":"1.0","id":2,"method":"ping"}`, "2", CodeInvalidRequest},
		{"no method", `{"jsonrpc":"2.0","id":3}`, "3", CodeInvalidRequest},
		{"unknown envelope field", `{"jsonrpc":"2.0","id":4,"method":"ping","extra":1}`, "4", CodeInvalidRequest},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", CodeInvalidRequest},
		{"unknown method", `{"jsonrpc":"2.0","id":5,"method":"nope"}`, "5", CodeMethodNotFound},
		{"array params", `{"jsonrpc":"2.0","id":6,"method":"ping","params":[1]}`, "6", CodeInvalidParams},
		{"unknown param", `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":1}}`, "7", CodeInvalidParams},
		{"wrong type", `{"jsonrpc":"2.0","id":"s8","method":"events.tail","params":{"after_seq":"ten"}}`, `"s8"`, CodeInvalidParams},
		{"oversize string", `{"jsonrpc":"2.0","id":9,"method":"control.take","params":{"conversation":"` + long + `"}}`, "9", CodeInvalidParams},
		{"bad limit", `{"jsonrpc":"2.0","id":10,"method":"events.tail","params":{"limit":100000}}`, "10", CodeInvalidParams},
		{"trailing data", `{"jsonrpc":"2.0","id":11,"method":"ping"} {}`, "null", CodeParseError},
		{"missing conversation", `{"jsonrpc":"2.0","id":12,"method":"control.take","params":{}}`, "12", CodeInvalidParams},
		{"hello unknown field", `{"jsonrpc":"2.0","id":13,"method":"auth.hello","params":{"token":"x","y":1}}`, "13", CodeInvalidParams},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rc.send(tc.frame)
			m := rc.recv()
			if m.Error == nil || m.Error.Code != tc.code {
				t.Fatalf("got %+v, want code %d", m.Error, tc.code)
			}
			if string(m.ID) != tc.id {
				t.Fatalf("id %s, want %s", m.ID, tc.id)
			}
		})
	}
	// A notification (no id) gets no response; the connection still works.
	rc.send(`{"jsonrpc":"2.0","method":"ping"}`)
	rc.send(`{"jsonrpc":"2.0","id":99,"method":"ping"}`)
	if m := rc.recv(); m.Error != nil || string(m.ID) != "99" {
		t.Fatalf("after bad frames: %+v", m)
	}
}

func TestOversizedFrameClosesConnection(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxFrame = 4096 })
	rc := e.raw("op")
	rc.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 100_000) + `"}}`)
	m := rc.recv()
	if m.Error == nil || m.Error.Code != CodeInvalidRequest || !strings.Contains(m.Error.Message, "4096") {
		t.Fatalf("oversized: %+v", m)
	}
	if m := rc.recv(); m.Method != NotifyClosing || !strings.Contains(string(m.Params), "frame_too_large") {
		t.Fatalf("notice: %+v", m)
	}
	if _, err := rc.r.ReadBytes('\n'); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && err == nil {
		t.Fatalf("connection left open: %v", err)
	}
	if r := <-e.closed; r != "frame_too_large" {
		t.Fatalf("close reason %q", r)
	}
	// The gateway carries on.
	if err := e.dial("op").Call(context.Background(), api.Ping.Name(), nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentClients(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	clients, calls := 50, 200
	if testing.Short() {
		clients, calls = 10, 50
	}
	names := []string{"op", "phone", "tablet", "ci"}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, err := Dial(ctx, e.sock, e.tokens[names[i%len(names)]])
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for j := 0; j < calls; j++ {
				var who auth.Principal
				if err := c.Call(ctx, api.Whoami.Name(), nil, &who); err != nil {
					errs <- err
					return
				}
				if who.Name != names[i%len(names)] {
					errs <- fmt.Errorf("client %d got %q", i, who.Name)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSlowClientDroppedWithoutBlocking(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.OutboundQueue = 8; o.WriteTimeout = 200 * time.Millisecond })
	ctx := context.Background()
	// The slow client subscribes and then never reads.
	slow := e.raw("ci")
	slow.send(`{"jsonrpc":"2.0","id":1,"method":"events.subscribe","params":{}}`)
	if m := slow.recv(); m.Error != nil {
		t.Fatalf("subscribe: %+v", m.Error)
	}
	fast := e.dial("op")
	payload := strings.Repeat("p", 32<<10)
	// Appends must all complete although the slow client reads nothing; its
	// socket buffer and queue fill and it is dropped.
	for i := 0; i < 400; i++ {
		if _, err := e.events.Append(ctx, "test.bulk", "", payload); err != nil {
			t.Fatal(err)
		}
	}
	if r := <-e.closed; r != "slow_consumer" && r != "write_failed" {
		t.Fatalf("close reason %q", r)
	}
	if err := fast.Call(ctx, api.Ping.Name(), nil, nil); err != nil {
		t.Fatalf("gateway blocked: %v", err)
	}
}

func TestEventsTailAndSubscribe(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		e.events.Append(ctx, eventlog.KindTurnStarted, "cli:1", map[string]int{"i": i})
	}
	c := e.dial("tablet")
	var tail TailResult
	if err := c.Call(ctx, api.EventsTail.Name(), TailParams{AfterSeq: 1, Limit: 10}, &tail); err != nil {
		t.Fatal(err)
	}
	if len(tail.Events) != 2 || tail.Events[0].Seq != 2 || tail.OldestRetained != 1 || tail.Missed || tail.More {
		t.Fatalf("tail: %+v", tail)
	}
	zero := int64(0)
	var sub SubscribeResult
	if err := c.Call(ctx, api.EventsSubscribe.Name(), SubscribeParams{AfterSeq: &zero}, &sub); err != nil {
		t.Fatal(err)
	}
	e.events.Append(ctx, eventlog.KindTurnFinished, "cli:1", nil)
	for want := int64(1); want <= 4; want++ {
		n := <-c.Notifications()
		var ev eventlog.Event
		if n.Method != NotifyEvent || json.Unmarshal(n.Params, &ev) != nil || ev.Seq != want {
			t.Fatalf("notification %d: %s %s", want, n.Method, n.Params)
		}
	}
	// A revoked subscriber's feed ends at the next re-check.
	if err := e.store.Revoke(ctx, "tablet"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * reverifyEvery)
	e.events.Append(ctx, "k", "", nil)
	n := <-c.Notifications()
	var dp DroppedParams
	if n.Method != NotifyEventsDropped || json.Unmarshal(n.Params, &dp) != nil || dp.Reason != "unauthorized" || dp.LastSeq != 4 {
		t.Fatalf("after revoke: %s %s", n.Method, n.Params)
	}
}

func TestTakeControlOverAPI(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	phone, op := e.dial("phone"), e.dial("op")
	var lease auth.Lease
	if err := phone.Call(ctx, api.ControlTake.Name(), ControlParams{Conversation: "telegram:7", TTLSeconds: 60}, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.Holder != "phone" || !lease.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("lease %+v", lease)
	}
	get := func() ControllerResult {
		var r ControllerResult
		if err := op.Call(ctx, api.ControlGet.Name(), ControlParams{Conversation: "telegram:7"}, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := get(); !r.Active || r.Controller != "phone" {
		t.Fatalf("get: %+v", r)
	}
	e.clk.Advance(61 * time.Second)
	if r := get(); r.Active {
		t.Fatalf("lease outlived ttl: %+v", r)
	}
	if err := phone.Call(ctx, api.ControlTake.Name(), ControlParams{Conversation: "c", TTLSeconds: -1}, nil); code(err) != CodeInvalidParams {
		t.Fatalf("negative ttl: %v", err)
	}
	if err := phone.Call(ctx, api.ControlRelease.Name(), ControlParams{Conversation: "c", TTLSeconds: 5}, nil); code(err) != CodeInvalidParams {
		t.Fatalf("ttl on release: %v", err)
	}
	if err := op.Call(ctx, api.ControlTake.Name(), ControlParams{Conversation: "telegram:7"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := phone.Call(ctx, api.ControlRelease.Name(), ControlParams{Conversation: "telegram:7"}, nil); code(err) != CodeForbidden {
		t.Fatalf("phone releasing op's lease: %v", err)
	}
	evs, _, _ := e.events.Tail(ctx, 0, 10)
	if len(evs) != 2 || evs[0].Kind != eventlog.KindControlTaken {
		t.Fatalf("events: %+v", evs)
	}
}

func TestBroadcastAndNotifier(t *testing.T) {
	e := newEnv(t, nil)
	ctx := context.Background()
	notifiers := make(chan Notifier, 1)
	e.srv.Handle("test.watch", Read, func(ctx context.Context, call *Call) (any, error) {
		notifiers <- call.Notifier()
		return nil, call.Notify("test.hi", map[string]string{"to": call.Principal.Name})
	})
	op, ci, phone := e.dial("op"), e.dial("ci"), e.dial("phone")
	if err := ci.Call(ctx, "test.watch", nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := <-ci.Notifications(); n.Method != "test.hi" {
		t.Fatalf("call.Notify: %+v", n)
	}
	later := <-notifiers
	if err := e.store.Revoke(ctx, "phone"); err != nil {
		t.Fatal(err)
	}
	n := e.srv.Broadcast(api.NotifyClarifyRequest.Name(), map[string]string{"question": "?"}, func(p auth.Principal) bool { return !p.ReadOnly && p.Role != auth.RoleCaptain })
	if n != 1 {
		t.Fatalf("broadcast reached %d connections, want 1 (op)", n)
	}
	if got := <-op.Notifications(); got.Method != api.NotifyClarifyRequest.Name() {
		t.Fatalf("op got %+v", got)
	}
	if err := later.Notify("test.later", nil); err != nil {
		t.Fatal(err)
	}
	if got := <-ci.Notifications(); got.Method != "test.later" {
		t.Fatalf("captain got %+v (must not see the broadcast)", got)
	}
	select {
	case got := <-phone.Notifications():
		t.Fatalf("revoked phone got %+v", got)
	default:
	}
	ci.Close()
	<-later.Done()
	if err := later.Notify("x", nil); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("notify after close: %v", err)
	}
}

func TestListenUnixStaleSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "rvn")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s.sock")
	// A dead gateway leaves its socket file behind.
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := ListenUnix(path); err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("live socket: %v", err)
	}
	ln.Close()
	<-done
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	if _, err := ListenUnix(file); err == nil {
		t.Fatal("regular file replaced")
	}
}

func TestHelloTimeout(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.HelloTimeout = 50 * time.Millisecond })
	rc := e.raw("")
	if m := rc.recv(); m.Error == nil || m.Error.Code != CodeUnauthorized {
		t.Fatalf("got %+v", m)
	}
	if r := <-e.closed; r != "hello_timeout" {
		t.Fatalf("reason %q", r)
	}
}

func TestTooManyHelloFailures(t *testing.T) {
	e := newEnv(t, nil)
	rc := e.raw("")
	for i := 0; i < maxHelloFailures; i++ {
		rc.send(`{"jsonrpc":"2.0","id":1,"method":"auth.hello","params":{"token":"rvn_x"}}`)
		if m := rc.recv(); m.Error == nil || m.Error.Code != CodeUnauthorized {
			t.Fatalf("got %+v", m)
		}
	}
	if r := <-e.closed; r != "auth_failures" {
		t.Fatalf("reason %q", r)
	}
}

func TestMaxConns(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxConns = 1 })
	e.dial("op")
	_, err := Dial(context.Background(), e.sock, e.tokens["op"])
	if code(err) != CodeUnavailable {
		t.Fatalf("over limit: %v", err)
	}
}

func TestShutdownNotifiesClients(t *testing.T) {
	dir, _ := os.MkdirTemp("", "rvn")
	defer os.RemoveAll(dir)
	e := newEnv(t, nil)
	_ = dir
	c := e.dial("op")
	// Ending Serve's context is what the gateway does on SIGTERM; emulate
	// through a second server sharing the store.
	srv := NewServer(Options{Auth: e.store, Clock: e.clk})
	srv.RegisterBuiltins(Builtins{})
	path := filepath.Join(dir, "b.sock")
	ln, err := ListenUnix(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	c2, err := Dial(context.Background(), path, e.tokens["op"])
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := <-c2.Notifications()
	if n.Method != NotifyClosing || !strings.Contains(string(n.Params), "shutdown") {
		t.Fatalf("got %+v", n)
	}
	<-c2.Done()
	if err := c2.Call(context.Background(), api.Ping.Name(), nil, nil); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("call after shutdown: %v", err)
	}
	if err := c.Call(context.Background(), api.Ping.Name(), nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestDialRetry(t *testing.T) {
	clk := clock.NewFake(t0)
	attempts := 0
	dial := func(ctx context.Context) (*Client, error) {
		attempts++
		if attempts < 3 {
			return nil, errors.New("connection refused")
		}
		return &Client{}, nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := DialRetry(context.Background(), dial, RetryOptions{Clock: clk, Min: time.Second, Max: 4 * time.Second})
		done <- err
	}()
	clk.BlockUntil(1)
	clk.Advance(time.Second)
	clk.BlockUntil(1)
	clk.Advance(2 * time.Second)
	if err := <-done; err != nil || attempts != 3 {
		t.Fatalf("err %v after %d attempts", err, attempts)
	}
	// Bad credentials are final.
	attempts = 0
	_, err := DialRetry(context.Background(), func(context.Context) (*Client, error) {
		attempts++
		return nil, Errorf(CodeUnauthorized, "unauthenticated")
	}, RetryOptions{Clock: clk})
	if code(err) != CodeUnauthorized || attempts != 1 {
		t.Fatalf("unauthorized retried: %v %d", err, attempts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := DialRetry(ctx, func(context.Context) (*Client, error) { return nil, errors.New("down") }, RetryOptions{Clock: clk}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestTLSListener(t *testing.T) {
	e := newEnv(t, nil)
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
	defer func() { cancel(); <-done }()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	c, err := DialTLS(ctx, ln.Addr().String(), e.tokens["phone"], &tls.Config{RootCAs: pool, ServerName: "localhost"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Call(ctx, api.ControlTake.Name(), ControlParams{Conversation: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := DialTLS(ctx, ln.Addr().String(), e.tokens["phone"], &tls.Config{ServerName: "localhost"}); err == nil {
		t.Fatal("untrusted certificate accepted")
	}
}

func selfSigned(t *testing.T) ([]byte, []byte) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "raven"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// TestRoundTripLatency reports the p50/p99 of a ping round trip over the
// unix socket (auth re-verification against SQLite included).
func TestRoundTripLatency(t *testing.T) {
	e := newEnv(t, nil)
	c := e.dial("op")
	ctx := context.Background()
	n := 3000
	lat := make([]time.Duration, n)
	for i := range lat {
		start := time.Now()
		if err := c.Call(ctx, api.Ping.Name(), nil, nil); err != nil {
			t.Fatal(err)
		}
		lat[i] = time.Since(start)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("control API ping round trip over unix socket: p50 %v, p99 %v, max %v (n=%d)", lat[n/2], lat[n*99/100], lat[n-1], n)
}

// BenchmarkRoundTrip measures sequential ping round trips over the unix
// socket and reports p50/p99 beside ns/op.
func BenchmarkRoundTrip(b *testing.B) {
	e := newEnv(b, nil)
	c := e.dial("op")
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := c.Call(ctx, api.Ping.Name(), nil, nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkParallelCalls measures throughput with concurrent clients.
func BenchmarkParallelCalls(b *testing.B) {
	e := newEnv(b, nil)
	b.RunParallel(func(pb *testing.PB) {
		c, err := Dial(context.Background(), e.sock, e.tokens["op"])
		if err != nil {
			b.Error(err)
			return
		}
		defer c.Close()
		for pb.Next() {
			if err := c.Call(context.Background(), api.Ping.Name(), nil, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
