package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/sqlitedb"
	"github.com/raven-agent/raven/internal/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeProvider answers with scripted responses and records requests.
type fakeProvider struct {
	mu     sync.Mutex
	script []func(req llm.Request) (*llm.Response, error)
	reqs   []llm.Request
}

func (f *fakeProvider) Name() string { return "fake" }
func (f *fakeProvider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	if len(f.script) == 0 {
		f.mu.Unlock()
		return nil, llm.ErrExhausted
	}
	next := f.script[0]
	f.script = f.script[1:]
	f.mu.Unlock()
	return next(req)
}

func text(s string) func(llm.Request) (*llm.Response, error) {
	return func(llm.Request) (*llm.Response, error) { return &llm.Response{Content: s}, nil }
}

func call(name, args string) func(llm.Request) (*llm.Response, error) {
	return func(llm.Request) (*llm.Response, error) {
		return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "c-" + name, Name: name, Arguments: args}}}, nil
	}
}

type fixture struct {
	agent    *Agent
	prov     *fakeProvider
	sessions *session.Store
	dir      string
	ws       *tools.Workspace
}

func newFixture(t testing.TB, script ...func(llm.Request) (*llm.Response, error)) *fixture {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ss, err := session.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := tools.NewWorkspace(filepath.Join(dir, "workspace"))
	prov := &fakeProvider{script: script}
	a := New(Options{
		Provider: prov, Tools: tools.NewRegistry(tools.NewReadFile(ws), tools.NewWriteFile(ws)), Sessions: ss,
		MemoryPath: filepath.Join(ws.Root(), "MEMORY.md"), HistoryPath: filepath.Join(ws.Root(), "memory", "HISTORY.md"),
		Clock:  clock.NewFake(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)),
		Config: Config{MaxIterations: 4, HistoryTailBytes: 4096, RecentMessages: 20},
	})
	return &fixture{agent: a, prov: prov, sessions: ss, dir: dir, ws: ws}
}

func runDirect(t *testing.T, a *Agent, req spine.TurnRequest) (string, error) {
	t.Helper()
	var reply string
	var err error
	s := spine.NewScheduler(func(ctx context.Context, tu *spine.Turn) (string, error) {
		reply, err = a.RunTurn(ctx, tu)
		return reply, err
	}, nil, spine.Options{})
	tk, serr := s.Submit(req)
	if serr != nil {
		t.Fatal(serr)
	}
	tk.Wait(context.Background())
	s.Shutdown(context.Background())
	return reply, err
}

func userReq(content string) spine.TurnRequest {
	return spine.TurnRequest{Origin: spine.OriginUser, Channel: "cli", ChatID: "direct", Content: content}
}

func TestTurnWithToolCall(t *testing.T) {
	f := newFixture(t, call("write_file", `{"path":"todo.md","content":"buy milk"}`), text("Saved."))
	os.WriteFile(filepath.Join(f.ws.Root(), "MEMORY.md"), []byte("Owner likes tea."), 0o600)
	reply, err := runDirect(t, f.agent, userReq("note: buy milk"))
	if err != nil || reply != "Saved." {
		t.Fatalf("reply = %q, %v", reply, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.ws.Root(), "todo.md")); string(b) != "buy milk" {
		t.Fatalf("tool did not run: %q", b)
	}
	second := f.prov.reqs[1].Messages
	last := second[len(second)-1]
	if last.Role != llm.RoleTool || !strings.Contains(last.Content, "wrote 8 bytes") || last.ToolCallID != "c-write_file" {
		t.Fatalf("tool result not fed back: %+v", last)
	}
	if sys := f.prov.reqs[0].Messages[0]; sys.Role != llm.RoleSystem || !strings.Contains(sys.Content, "Owner likes tea.") {
		t.Fatalf("MEMORY.md missing from system prompt: %q", sys.Content)
	}
	if len(f.prov.reqs[0].Tools) != 2 {
		t.Fatalf("tools not offered: %v", f.prov.reqs[0].Tools)
	}
	msgs, _ := f.sessions.Recent(context.Background(), "cli:direct", 10)
	if len(msgs) != 4 {
		t.Fatalf("session holds %d messages, want user, call, result, reply", len(msgs))
	}
	hist, _ := os.ReadFile(filepath.Join(f.ws.Root(), "memory", "HISTORY.md"))
	if !strings.Contains(string(hist), "user: note: buy milk") || !strings.Contains(string(hist), "assistant: Saved.") {
		t.Fatalf("history = %q", hist)
	}
	// The next turn sees the previous one in its prompt, and the history tail.
	f.prov.script = append(f.prov.script, text("ok"))
	runDirect(t, f.agent, userReq("thanks"))
	p := f.prov.reqs[2]
	if len(p.Messages) != 1+4+1 || !strings.Contains(p.Messages[0].Content, "assistant: Saved.") {
		t.Fatalf("second turn prompt: %d messages; system=%q", len(p.Messages), p.Messages[0].Content)
	}
}

func TestMalformedToolArgumentsAreFedBack(t *testing.T) {
	f := newFixture(t, call("read_file", `{"path": `), call("read_file", `{"path":"nope.md"}`), text("Could not read it."))
	reply, err := runDirect(t, f.agent, userReq("read"))
	if err != nil || reply != "Could not read it." {
		t.Fatalf("turn did not continue: %q, %v", reply, err)
	}
	fb := f.prov.reqs[1].Messages
	if got := fb[len(fb)-1].Content; !strings.HasPrefix(got, "error: ") || !strings.Contains(got, "not valid JSON") {
		t.Fatalf("malformed args result = %q", got)
	}
}

func TestIterationCap(t *testing.T) {
	loop := call("read_file", `{"path":"x"}`)
	f := newFixture(t, loop, loop, loop, loop, loop)
	if _, err := runDirect(t, f.agent, userReq("loop")); !errors.Is(err, ErrMaxIterations) {
		t.Fatalf("err = %v, want ErrMaxIterations", err)
	}
	if len(f.prov.reqs) != 4 {
		t.Fatalf("model called %d times, want the cap 4", len(f.prov.reqs))
	}
}

func TestHookChainsAreGatedByOrigin(t *testing.T) {
	cases := []struct {
		origin       spine.Origin
		hooks, after bool
	}{
		{spine.OriginUser, true, true},
		{spine.OriginAnswer, true, false},
		{spine.OriginSentinel, false, false},
		{spine.OriginCron, false, false},
		{spine.OriginHeartbeat, false, false},
		{spine.OriginSubagent, false, false},
	}
	for _, c := range cases {
		t.Run(string(c.origin), func(t *testing.T) {
			f := newFixture(t, text("reply"))
			var hookRan bool
			f.agent.AddInboundHook(func(ctx context.Context, req spine.TurnRequest) (bool, string) { hookRan = true; return false, "" })
			f.agent.AddResponseModifier(func(key, content string) string { return content + " [+nudge for " + key + "]" })
			req := userReq("hi")
			req.Origin = c.origin
			reply, err := runDirect(t, f.agent, req)
			if err != nil {
				t.Fatal(err)
			}
			if hookRan != c.hooks {
				t.Errorf("inbound hook ran = %v, want %v", hookRan, c.hooks)
			}
			if got := strings.Contains(reply, "[+nudge for cli:direct]"); got != c.after {
				t.Errorf("modifier applied = %v (%q), want %v", got, reply, c.after)
			}
		})
	}
}

func TestInboundHookConsumesTurn(t *testing.T) {
	f := newFixture(t)
	f.agent.AddInboundHook(func(ctx context.Context, req spine.TurnRequest) (bool, string) {
		return req.Content == "2", "Picked option 2."
	})
	reply, err := runDirect(t, f.agent, userReq("2"))
	if err != nil || reply != "Picked option 2." || len(f.prov.reqs) != 0 {
		t.Fatalf("pick reached the model: reply=%q err=%v calls=%d", reply, err, len(f.prov.reqs))
	}
}

func TestNoModelExplainsConfiguration(t *testing.T) {
	f := newFixture(t)
	f.agent.o.Provider = nil
	reply, err := runDirect(t, f.agent, userReq("hello"))
	if err != nil || !strings.Contains(reply, "raven config set model") {
		t.Fatalf("reply = %q, %v", reply, err)
	}
	req := userReq("cron job")
	req.Origin = spine.OriginCron
	if _, err := runDirect(t, f.agent, req); !errors.Is(err, llm.ErrNoModel) {
		t.Fatalf("proactive turn without model: %v, want ErrNoModel", err)
	}
}

func TestInjectIsMergedBeforeNextModelCall(t *testing.T) {
	release := make(chan struct{})
	inFirstCall := make(chan struct{})
	f := newFixture(t,
		func(llm.Request) (*llm.Response, error) {
			close(inFirstCall)
			<-release
			return &llm.Response{ToolCalls: []llm.ToolCall{{ID: "1", Name: "read_file", Arguments: `{"path":"x"}`}}}, nil
		},
		text("done, and noted your PS"),
	)
	s := spine.NewScheduler(f.agent.RunTurn, nil, spine.Options{})
	defer s.Shutdown(context.Background())
	first, _ := s.Submit(userReq("start"))
	<-inFirstCall
	inj, _ := s.Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: "cli", ChatID: "direct", Content: "PS: use metric", Busy: spine.Inject})
	close(release)
	r, _ := first.Wait(context.Background())
	ir, _ := inj.Wait(context.Background())
	if !ir.Injected || r.Reply != "done, and noted your PS" {
		t.Fatalf("inject=%+v first=%+v", ir, r)
	}
	msgs := f.prov.reqs[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != llm.RoleUser || last.Content != "PS: use metric" {
		t.Fatalf("injected message not merged before second call: %+v", last)
	}
}

func TestSubagentResultDeliveredThroughHub(t *testing.T) {
	f := newFixture(t, text("digest: 3 unread"))
	hub := spine.NewHub(nil)
	got := make(chan spine.Message, 1)
	hub.Register("telegram", spine.OutletFunc(func(ctx context.Context, m spine.Message) error { got <- m; return nil }))
	s := spine.NewScheduler(f.agent.RunTurn, hub, spine.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	m := NewSubagentManager(ctx, s.Submit, hub.Post, nil)
	done := make(chan string, 1)
	m.OnDone = func(id string) { done <- id }
	id, err := m.Spawn(ctx, "summarise inbox", "telegram", "42")
	if err != nil {
		t.Fatal(err)
	}
	msg := <-got
	if msg.Content != "digest: 3 unread" || msg.ChatID != "42" || !msg.Proactive || msg.Origin != spine.OriginSubagent {
		t.Fatalf("delivered %+v", msg)
	}
	if d := <-done; d != id {
		t.Fatalf("OnDone id = %q want %q", d, id)
	}
	m.Wait()
	cancel()
	s.Shutdown(context.Background())
}

// stuckTool blocks until its context ends; waits marks it as waiting for the owner.
type stuckTool struct{ waits bool }

func (stuckTool) Name() string               { return "stuck" }
func (stuckTool) Description() string        { return "blocks" }
func (stuckTool) Parameters() map[string]any { return map[string]any{"type": "object"} }
func (s stuckTool) WaitsForOwner() bool      { return s.waits }
func (stuckTool) Run(ctx context.Context, _ json.RawMessage) (string, error) {
	<-ctx.Done()
	return "", ctx.Err()
}

func TestToolTimeoutExceptForOwnerWaits(t *testing.T) {
	f := newFixture(t, call("stuck", `{}`), text("gave up"))
	f.agent.o.Config.ToolTimeout = 20 * time.Millisecond
	f.agent.Tools().Register(stuckTool{})
	reply, err := runDirect(t, f.agent, userReq("go"))
	if err != nil || reply != "gave up" {
		t.Fatalf("turn = %q, %v", reply, err)
	}
	fb := f.prov.reqs[1].Messages
	if got := fb[len(fb)-1].Content; !strings.Contains(got, "did not finish within 20ms") {
		t.Fatalf("timeout not reported to the model: %q", got)
	}

	// A tool waiting for the owner is not cut off by the work timeout: the
	// turn's own cancellation is what ends it here.
	g := newFixture(t, call("stuck", `{}`), text("unreachable"))
	g.agent.o.Config.ToolTimeout = 20 * time.Millisecond
	g.agent.Tools().Register(stuckTool{waits: true})
	s := spine.NewScheduler(g.agent.RunTurn, nil, spine.Options{})
	defer s.Shutdown(context.Background())
	tk, _ := s.Submit(userReq("ask"))
	select {
	case <-tk.Done():
		t.Fatal("owner-waiting tool was cut off by the work timeout")
	case <-time.After(200 * time.Millisecond):
	}
	s.Cancel("cli:direct")
	if r, _ := tk.Wait(context.Background()); r.Err == nil {
		t.Fatal("cancelled turn reported no error")
	}
}

func TestSubagentOfCronTurnInheritsLineage(t *testing.T) {
	var got spine.TurnRequest
	m := NewSubagentManager(context.Background(), func(r spine.TurnRequest) (*spine.Ticket, error) {
		got = r
		return nil, errors.New("not run")
	}, nil, nil)
	ctx := tools.WithTurn(context.Background(), tools.TurnInfo{Origin: spine.OriginCron, FromCron: true})
	m.Spawn(ctx, "research", "telegram", "1")
	if v, _ := got.Extras[tools.ExtraFromCron].(bool); !v {
		t.Fatalf("subagent of a cron turn lost its lineage: %+v", got.Extras)
	}
	m.Spawn(tools.WithTurn(context.Background(), tools.TurnInfo{Origin: spine.OriginUser}), "x", "telegram", "1")
	if got.Extras != nil {
		t.Fatalf("user subagent marked from cron: %+v", got.Extras)
	}
}

// Run hands the result to done and posts nothing itself: the requester
// (the Sentinel's dispatcher) delivers it.
func TestSubagentRunHandsResultToDone(t *testing.T) {
	f := newFixture(t, text("digest: 2 unread"))
	hub := spine.NewHub(nil)
	posted := make(chan spine.Message, 1)
	hub.Register("telegram", spine.OutletFunc(func(ctx context.Context, m spine.Message) error { posted <- m; return nil }))
	s := spine.NewScheduler(f.agent.RunTurn, hub, spine.Options{})
	defer s.Shutdown(context.Background())
	m := NewSubagentManager(context.Background(), s.Submit, hub.Post, nil)
	type outcome struct {
		result string
		err    error
	}
	got := make(chan outcome, 2)
	if err := m.Run(context.Background(), "summarise inbox", func(_ context.Context, result string, err error) {
		got <- outcome{result, err}
	}); err != nil {
		t.Fatal(err)
	}
	m.Wait()
	if o := <-got; o.result != "digest: 2 unread" || o.err != nil {
		t.Fatalf("done got %+v", o)
	}
	select {
	case o := <-got:
		t.Fatalf("done called twice: %+v", o)
	case msg := <-posted:
		t.Fatalf("Run posted the result itself: %+v", msg)
	default:
	}
}

// A subagent whose turn cannot be queued never calls done: Run's error is
// the only answer.
func TestSubagentRunSubmitErrorSkipsDone(t *testing.T) {
	m := NewSubagentManager(context.Background(), func(spine.TurnRequest) (*spine.Ticket, error) {
		return nil, errors.New("pool closed")
	}, nil, nil)
	called := false
	err := m.Run(context.Background(), "x", func(context.Context, string, error) { called = true })
	m.Wait()
	if err == nil || called {
		t.Fatalf("Run = %v, done called %v", err, called)
	}
}
