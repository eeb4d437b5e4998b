package chat

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/spine"
)

// Well-formed tokens (auth.ReadTokenFile checks the shape).
var (
	testToken  = auth.TokenPrefix + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32))
	wrongToken = auth.TokenPrefix + base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{2}, 32))
)

type verifier struct{}

func (verifier) Verify(_ context.Context, tok string) (auth.Principal, error) {
	if tok != testToken {
		return auth.Principal{}, auth.ErrUnauthenticated
	}
	return auth.Principal{Name: auth.OperatorName, Role: auth.RoleOperator}, nil
}

// fakeGateway serves chat.attach on a unix socket and records the attached
// connections, so a test can push chat.message to them.
type fakeGateway struct {
	t      testing.TB
	socket string
	token  string

	mu       sync.Mutex
	attached map[string][]controlapi.Notifier
	attachCh chan string

	stop   context.CancelFunc
	served chan error
}

func newFakeGateway(t testing.TB) *fakeGateway {
	t.Helper()
	// Unix socket paths are limited to ~108 bytes; t.TempDir can be longer.
	dir, err := os.MkdirTemp("", "rvnchat")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tokenFile := filepath.Join(dir, "operator.token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &fakeGateway{t: t, socket: filepath.Join(dir, "raven.sock"), token: tokenFile, attachCh: make(chan string, 16)}
}

// start serves until stop; it can be called again to model a restart.
func (g *fakeGateway) start() {
	g.t.Helper()
	srv := controlapi.NewServer(controlapi.Options{Auth: verifier{}})
	g.mu.Lock()
	g.attached = map[string][]controlapi.Notifier{}
	g.mu.Unlock()
	controlapi.Handle(srv, api.ChatAttach, controlapi.Read, func(_ context.Context, c *controlapi.Call, p api.ChatAttachParams) (api.ChatAttachResult, error) {
		g.mu.Lock()
		g.attached[p.Conversation] = append(g.attached[p.Conversation], c.Notifier())
		g.mu.Unlock()
		g.attachCh <- p.Conversation
		return api.ChatAttachResult{Attached: p.Conversation}, nil
	})
	ln, err := controlapi.ListenUnix(g.socket)
	if err != nil {
		g.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.stop, g.served = cancel, make(chan error, 1)
	go func() { g.served <- srv.Serve(ctx, ln) }()
	g.t.Cleanup(g.shutdown)
}

func (g *fakeGateway) shutdown() {
	if g.stop == nil {
		return
	}
	g.stop()
	<-g.served
	g.stop = nil
}

// push sends a chat.message to the connections attached to conv and reports
// how many it reached.
func (g *fakeGateway) push(method string, m channels.ChatMessage, conv string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, c := range g.attached[conv] {
		if c.Notify(method, m) == nil {
			n++
		}
	}
	return n
}

func (g *fakeGateway) waitAttach(t *testing.T) string {
	t.Helper()
	select {
	case conv := <-g.attachCh:
		return conv
	case <-time.After(10 * time.Second):
		t.Fatal("no chat.attach within 10s")
		return ""
	}
}

// syncBuffer is the terminal a test reads while Follow writes to it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not a wait for behaviour
	}
}

// runFollow starts Follow on a fake clock; the returned stop ends it and
// returns its error.
func runFollow(t *testing.T, g *fakeGateway, clk clock.Clock, out *syncBuffer) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cli := channels.NewCLI(out)
	go func() {
		done <- Follow(ctx, FollowOptions{
			Conversation: "cli:direct", Deliver: cli.Deliver, Clock: clk,
			MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
			Dial: func(ctx context.Context) (*controlapi.Client, error) { return DialGateway(ctx, g.socket, g.token) },
		})
	}()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("Follow did not return within 10s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return stop
}

// Follow shows the attached conversation's chat.message notifications,
// proactive ones with the marker, and nothing else.
func TestFollowDeliversAttachedConversation(t *testing.T) {
	g := newFakeGateway(t)
	g.start()
	var out syncBuffer
	stop := runFollow(t, g, clock.Real(), &out)
	if conv := g.waitAttach(t); conv != "cli:direct" {
		t.Fatalf("attached to %q, want cli:direct", conv)
	}
	msgs := []struct {
		method string
		m      channels.ChatMessage
		want   string // "" means it must not show
	}{
		{api.NotifyChatMessage.Name(), channels.ChatMessage{Conversation: "cli:direct", Content: "Stand up and stretch.", Origin: "cron", Proactive: true},
			channels.ProactiveMarker + "Stand up and stretch."},
		{api.NotifyChatMessage.Name(), channels.ChatMessage{Conversation: "cli:direct", Content: "Here is the answer.", Origin: "answer", Reply: true},
			"Here is the answer."},
		{api.NotifyChatMessage.Name(), channels.ChatMessage{Conversation: "tui:main", Content: "for the TUI"}, ""},
		{api.NotifyClarifyRequest.Name(), channels.ChatMessage{Conversation: "cli:direct", Content: "not a chat message"}, ""},
	}
	for _, m := range msgs {
		g.push(m.method, m.m, "cli:direct")
	}
	// A last marker message flushes the ordering: everything before it has
	// been handled once it shows.
	g.push(api.NotifyChatMessage.Name(), channels.ChatMessage{Conversation: "cli:direct", Content: "end", Proactive: true}, "cli:direct")
	waitFor(t, "the last message", func() bool { return strings.Contains(out.String(), channels.ProactiveMarker+"end") })
	got := out.String()
	for _, m := range msgs {
		switch {
		case m.want != "" && !strings.Contains(got, m.want+"\n"):
			t.Errorf("output lacks %q:\n%s", m.want, got)
		case m.want == "" && strings.Contains(got, m.m.Content):
			t.Errorf("output shows %q, which is not for this terminal:\n%s", m.m.Content, got)
		}
	}
	if strings.Contains(got, channels.ProactiveMarker+"Here is the answer") {
		t.Errorf("a reply got the proactive marker:\n%s", got)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// With no gateway yet, Follow keeps knocking on the backoff schedule; it
// attaches when one starts and again after that gateway restarts.
func TestFollowReconnects(t *testing.T) {
	g := newFakeGateway(t)
	clk := clock.NewFake(time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC))
	var out syncBuffer
	stop := runFollow(t, g, clk, &out)

	// No gateway: the first dial fails and Follow sleeps on the clock.
	clk.BlockUntil(1)
	g.start()
	clk.Advance(100 * time.Millisecond)
	g.waitAttach(t)
	g.push(api.NotifyChatMessage.Name(), channels.ChatMessage{Conversation: "cli:direct", Content: "first", Proactive: true}, "cli:direct")
	waitFor(t, "first", func() bool { return strings.Contains(out.String(), "first") })

	// Restart: the connection drops, the socket is gone for a moment.
	g.shutdown()
	clk.BlockUntil(1)
	g.start()
	// One failed dial is sleeping out MinBackoff; past it, the next dial
	// finds the new gateway.
	clk.Advance(time.Second)
	g.waitAttach(t)
	g.push(api.NotifyChatMessage.Name(), channels.ChatMessage{Conversation: "cli:direct", Content: "second", Proactive: true}, "cli:direct")
	waitFor(t, "second", func() bool { return strings.Contains(out.String(), "second") })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestFollowRejectsBadOptions(t *testing.T) {
	ctx := context.Background()
	dial := func(context.Context) (*controlapi.Client, error) { return nil, errors.New("x") }
	deliver := func(context.Context, spine.Message) error { return nil }
	tests := []struct {
		name string
		o    FollowOptions
	}{
		{"no dial", FollowOptions{Conversation: "cli:direct", Deliver: deliver}},
		{"no deliver", FollowOptions{Conversation: "cli:direct", Dial: dial}},
		{"bad conversation", FollowOptions{Conversation: "direct", Dial: dial, Deliver: deliver}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Follow(ctx, tt.o); err == nil {
				t.Fatal("Follow accepted bad options")
			}
		})
	}
}

// DialGateway tells "no gateway" (fall back) from "a gateway that refused
// us" (do not).
func TestDialGateway(t *testing.T) {
	g := newFakeGateway(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	if _, err := DialGateway(ctx, g.socket, g.token); !errors.Is(err, ErrNoGateway) {
		t.Fatalf("no socket: %v, want ErrNoGateway", err)
	}
	// A socket file left by a gateway that died: nothing accepts.
	ln, err := net.Listen("unix", g.socket)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := DialGateway(ctx, g.socket, g.token); !errors.Is(err, ErrNoGateway) {
		t.Fatalf("stale socket: %v, want ErrNoGateway", err)
	}

	g.start()
	c, err := DialGateway(ctx, g.socket, g.token)
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Principal(); p.Name != auth.OperatorName {
		t.Errorf("principal %+v", p)
	}
	c.Close()

	bad := filepath.Join(filepath.Dir(g.token), "bad.token")
	if err := os.WriteFile(bad, []byte(wrongToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(filepath.Dir(g.token), "missing.token")
	for name, tok := range map[string]string{"wrong token": bad, "missing token file": missing} {
		_, err := DialGateway(ctx, g.socket, tok)
		if err == nil || errors.Is(err, ErrNoGateway) {
			t.Errorf("%s: %v, want a real error, not ErrNoGateway", name, err)
		}
	}
	if _, err := DialGateway(ctx, g.socket, bad); !controlapi.IsCode(err, controlapi.CodeUnauthorized) {
		t.Errorf("wrong token: %v, want unauthorized", err)
	}
}

// Work registered with Go ends when the REPL ends (here: Ctrl-D, i.e. EOF).
func TestREPLGoEndsWithRun(t *testing.T) {
	ended := make(chan struct{})
	var out syncBuffer
	r, err := New(Options{
		Conversation: "cli:direct",
		Dispatch:     func(context.Context, spine.TurnRequest) (*spine.Ticket, error) { return nil, nil },
		Stdin:        nopCloser{strings.NewReader("")}, Stdout: &out, Stderr: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Go(func(ctx context.Context) {
		<-ctx.Done()
		close(ended)
	})
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	default:
		t.Fatal("Run returned before the background work ended")
	}
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
