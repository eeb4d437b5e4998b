package runtime

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/sandbox"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/mcp/mcptest"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

func TestMain(m *testing.M) {
	// The exec tool re-executes this binary as its sandbox supervisor.
	if len(os.Args) > 1 && os.Args[1] == sandbox.SupervisorCommand {
		os.Exit(sandbox.Supervise())
	}
	// MCP tests configure this binary as their stdio server.
	if len(os.Args) > 1 && os.Args[1] == mcptest.Command {
		os.Exit(mcptest.Main(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

// newApp builds the runtime on a fresh data dir with the default config
// (sentinel.enabled as given; its loop runs when enabled), a fake clock and
// prov as the model. opts adjust the options before Build.
func newApp(t *testing.T, enabled bool, prov llm.Provider, opts ...func(*Options)) (*Runtime, *clock.Fake) {
	t.Helper()
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Sentinel.Enabled = enabled
	cfg.Sentinel.Policy.Location = time.UTC
	clk := clock.NewFake(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC))
	o := Options{Paths: p, Config: cfg, Clock: clk, Provider: prov}
	if enabled {
		o.Services = ServiceSentinel
	}
	for _, f := range opts {
		f(&o)
	}
	a, err := Build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(context.Background()) })
	return a, clk
}

func newSentinelApp(t *testing.T, enabled bool, turns []llm.Turn, opts ...func(*Options)) (*Runtime, *clock.Fake) {
	t.Helper()
	return newApp(t, enabled, llm.NewScripted(turns), opts...)
}

// settledOn returns an option whose OnTurnDone signals each finished turn
// on the returned channel, after the runtime's own observers ran.
func settledOn() (func(*Options), chan struct{}) {
	ch := make(chan struct{}, 16)
	return func(o *Options) { o.OnTurnDone = func(spine.TurnRequest, spine.Result) { ch <- struct{}{} } }, ch
}

func turn(t *testing.T, a *Runtime, content string) string {
	t.Helper()
	tk, err := a.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: "cli", ChatID: "local", Content: content})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tk.Wait(context.Background())
	if err != nil || res.Err != nil {
		t.Fatal(err, res.Err)
	}
	return res.Reply
}

// syncBuffer is a terminal a test reads while the runtime writes to it.
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

// eventually polls cond until it holds, failing after 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

// benchRuntime is newApp for benchmarks: default config, no services.
func benchRuntime(b *testing.B) (*Runtime, *clock.Fake) {
	b.Helper()
	p, err := config.NewPaths(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC))
	rt, err := Build(context.Background(), Options{Paths: p, Config: config.Default(), Clock: clk, Provider: llm.NewScripted(nil)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close(context.Background()) })
	return rt, clk
}

func addSessionB(b *testing.B, rt *Runtime, channel, chatID string, at time.Time) {
	b.Helper()
	if err := rt.Sessions().Append(context.Background(), session.Entry{Message: llm.Message{Role: llm.RoleUser, Content: "hi"},
		Conversation: spine.ConversationKey(channel, chatID), Channel: channel, ChatID: chatID, Origin: "user", At: at}); err != nil {
		b.Fatal(err)
	}
}
