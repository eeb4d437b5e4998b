package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

const testMenu = `{"title":"A few things for today:","options":[` +
	`{"title":"Rent reminder","kind":"reply","reply":"Rent is due Friday."},` +
	`{"title":"Passport office","kind":"reply","reply":"The passport office closes at 16:00."}]}`

// userTurn submits one owner message on channel:chatID and returns its result.
func userTurn(t *testing.T, a *Runtime, channel, chatID, content string) spine.Result {
	t.Helper()
	tk, err := a.Scheduler().Submit(spine.TurnRequest{Origin: spine.OriginUser, Channel: channel, ChatID: chatID, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tk.Wait(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// A discovery menu planned for a session nobody watches goes to the
// forward channel (ISSUE8 §2.5); it is answerable there (§2.1): the owner's
// "2" on that channel runs the pick without reaching the agent loop, and a
// "2" in the planned session, where the menu was never shown, is an
// ordinary message.
func TestMenuOnForwardChannelIsPickedThere(t *testing.T) {
	defer goleak.VerifyNone(t)
	prov := llm.NewScripted([]llm.Turn{{Content: "Two what?"}})
	a, clk := newApp(t, false, prov, func(o *Options) {
		o.PlannerProvider = &plannerProvider{menu: testMenu}
		o.Config.Channels.Forward = []string{"telegram:123"}
	})
	defer a.Close(context.Background())
	ctx := context.Background()
	tg := make(chan spine.Message, 4)
	a.Hub().Register("telegram", spine.OutletFunc(func(_ context.Context, m spine.Message) error { tg <- m; return nil }))
	// The owner's last conversation was a TUI since closed: discovery
	// plans the menu there.
	if err := a.Sessions().Append(ctx, session.Entry{Message: llm.Message{Role: llm.RoleUser, Content: "hi"},
		Conversation: "tui:main", Channel: "tui", ChatID: "main", Origin: "user", At: clk.Now()}); err != nil {
		t.Fatal(err)
	}

	res := a.Sentinel().Runner.RunDiscovery(ctx)
	if !res.Delivered || len(res.Targets) != 1 || res.Targets[0] != "telegram:123" {
		t.Fatalf("menu not delivered to the forward channel: %+v", res)
	}
	if m := <-tg; !strings.Contains(m.Content, "2. Passport office") {
		t.Fatalf("telegram got %+v", m)
	}

	if r := userTurn(t, a, "tui", "main", "2"); r.Reply != "Two what?" {
		t.Fatalf("a \"2\" where the menu was never shown was taken as a pick: %+v", r)
	}
	r := userTurn(t, a, "telegram", "123", "2")
	if !strings.Contains(r.Reply, "passport office closes at 16:00") {
		t.Fatalf("pick on the forward channel: %+v", r)
	}
	if n := len(prov.Requests()); n != 1 {
		t.Fatalf("the pick reached the agent loop: %d model calls, want 1", n)
	}
	assertMenuDone(t, a, 2)
}

// A menu no surface could take waits in the outbox; the chat that attaches
// shows it and its "1" is the pick, run without a model call.
func TestMenuFromOutboxIsPickedOnAttach(t *testing.T) {
	defer goleak.VerifyNone(t)
	prov := llm.NewScripted(nil)
	a, _ := newApp(t, false, prov, func(o *Options) { o.PlannerProvider = &plannerProvider{menu: testMenu} })
	defer a.Close(context.Background())
	ctx := context.Background()

	res := a.Sentinel().Runner.RunDiscovery(ctx)
	if !res.Delivered || res.Targets[0] != OutboxChannel+":"+OutboxChatID {
		t.Fatalf("menu not kept in the outbox: %+v", res)
	}
	shown := make(chan spine.Message, 4)
	detach, err := a.AttachOwner(ctx, CLIConversation, SurfaceFunc(func(_ context.Context, m spine.Message) error { shown <- m; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	defer detach()
	if m := <-shown; !strings.Contains(m.Content, "1. Rent reminder") {
		t.Fatalf("attach showed %+v", m)
	}
	r := userTurn(t, a, CLIChannel, CLIChatID, "1")
	if !strings.Contains(r.Reply, "Rent is due Friday.") || len(prov.Requests()) != 0 {
		t.Fatalf("pick after attach: %+v (model calls %d)", r, len(prov.Requests()))
	}
	assertMenuDone(t, a, 1)
	// What the owner read is in the conversation for the next turn.
	ms, err := a.Sessions().Recent(ctx, CLIConversation, 10)
	if err != nil || len(ms) == 0 || !strings.Contains(ms[0].Content, "1. Rent reminder") {
		t.Fatalf("shown menu not in the session: %+v %v", ms, err)
	}
}

// A picked tool option runs through the runtime's tools registry (ISSUE8
// §2.7), under the default policy, and its output is the reply.
func TestMenuToolPickRunsRegistryTool(t *testing.T) {
	defer goleak.VerifyNone(t)
	prov := llm.NewScripted(nil)
	a, _ := newApp(t, false, prov)
	defer a.Close(context.Background())
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(a.Workspace().Root(), "notes.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	pd, err := a.Sentinel().Pending.Put(ctx, executor.PendingDecision{Session: "cli:local", Title: "Today:", Options: []executor.Option{
		{Title: "List the workspace", Kind: executor.KindTool, Tool: "list_dir", Args: json.RawMessage(`{"path":"."}`)},
		{Title: "Bad arguments", Kind: executor.KindTool, Tool: "list_dir", Args: json.RawMessage(`{"nope":1}`)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := userTurn(t, a, "cli", "local", "2"); !strings.Contains(r.Reply, "invalid arguments for list_dir") || !strings.Contains(r.Reply, "reply 2 to try again") {
		t.Fatalf("a failing tool pick: %+v", r)
	}
	if r := userTurn(t, a, "cli", "local", "1"); !strings.Contains(r.Reply, "notes.txt") {
		t.Fatalf("tool pick: %+v", r)
	}
	if len(prov.Requests()) != 0 {
		t.Fatal("a tool pick reached the model")
	}
	_ = pd
	assertMenuDone(t, a, 1)
}

func assertMenuDone(t *testing.T, a *Runtime, picked int) {
	t.Helper()
	all, err := a.Sentinel().Pending.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if last := all[len(all)-1]; last.State != executor.StateDone || last.Picked != picked {
		t.Fatalf("menu after the pick: %+v", last)
	}
}
