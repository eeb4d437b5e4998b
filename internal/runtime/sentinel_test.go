package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/spine"
)

// Disabled, the Sentinel is still wired: an inject rides the next reply,
// the agent's nudge_feedback tool records a verdict for the turn's session
// into the log and the policy, and the assembler sees the session store.
func TestBuildWiresSentinelIntoAgentLoop(t *testing.T) {
	defer goleak.VerifyNone(t)
	// Observers run in registration order: once this one ran, the
	// Sentinel's settle of the same turn has too.
	observe, settled := settledOn()
	a, _ := newSentinelApp(t, false, []llm.Turn{
		{Content: "Sunny and 14°C."},
		{ToolCalls: []llm.ToolCall{{ID: "c1", Name: feedback.ToolName, Arguments: `{"verdict":"dismissed","nudge_id":"n-plumber","reason":"stop"}`}}},
		{Content: "OK, I won't remind you again."},
	}, observe)
	defer a.Close(context.Background())
	ctx := context.Background()
	sys := a.Sentinel()
	// The terminal the owner reads: a reply nobody sees charges no inject.
	if _, err := a.Attach(ctx, "cli:local", SurfaceFunc(func(context.Context, spine.Message) error { return nil })); err != nil {
		t.Fatal(err)
	}
	if _, ok := a.Tools().Get(feedback.ToolName); !ok {
		t.Fatal("nudge_feedback not registered")
	}

	if r := sys.Injector.Queue(ctx, executor.Nudge{Session: "cli:local", Message: "Passport office closes at 16:00."}); !r.Queued {
		t.Fatalf("%+v", r)
	}
	if reply := turn(t, a, "weather?"); !strings.Contains(reply, "Sunny") || !strings.Contains(reply, "Passport office") {
		t.Fatalf("inject did not ride the reply: %q", reply)
	}
	<-settled
	if ns, _ := sys.Feedback.Nudges(5); len(ns) != 1 || ns[0].Action != policy.ActionInject || ns[0].Session != "cli:local" {
		t.Fatalf("inject not tracked: %+v", ns)
	}

	if err := sys.Feedback.RecordDispatched(ctx, feedback.Record{NudgeID: "n-plumber", Topic: "plumber", Session: "cli:local"}); err != nil {
		t.Fatal(err)
	}
	turn(t, a, "stop reminding me about the plumber")
	<-settled
	ns, _ := sys.Feedback.Nudges(5)
	if ns[0].NudgeID != "n-plumber" || ns[0].Verdict != feedback.EventDismissed {
		t.Fatalf("verdict not recorded: %+v", ns)
	}
	recent, _ := sys.Feedback.Recent(1)
	if recent[0].Session != "cli:local" {
		t.Fatalf("session from the turn: %+v", recent[0])
	}
	if snap := sys.Policy.SnapshotState(); snap.DismissalCooldownUntil.IsZero() {
		t.Fatal("verdict did not reach the policy")
	}

	pc := sys.Assembler.Assemble(ctx)
	if len(pc.ActiveSessions) != 1 || pc.ActiveSessions[0].Key != "cli:local" || pc.ActiveSessions[0].LastUser == "" {
		t.Fatalf("sessions: %+v", pc.ActiveSessions)
	}
	if last, ok := a.Sessions().LastActivity(ctx, "cli:local"); !ok || last.IsZero() {
		t.Fatal("no last activity")
	}
}

// Enabled, the tick and defer loops run until the App closes.
func TestSentinelServiceRunsUntilClose(t *testing.T) {
	defer goleak.VerifyNone(t)
	a, clk := newSentinelApp(t, true, nil)
	clk.BlockUntil(2) // the tick loop and the defer loop are sleeping
	if err := a.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestBuildBadPlannerModel(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Sentinel.PlannerModel = "nosuch/model"
	if _, err := Build(context.Background(), Options{Paths: p, Config: cfg, Provider: llm.NewScripted(nil)}); err == nil || !strings.Contains(err.Error(), "planner_model") {
		t.Fatalf("got %v", err)
	}
}

// An inject is charged to the policy once, when queued (ISSUE8 §2.2), and
// logged for feedback only when the reply it rode on reached an outlet; a
// failed delivery puts it back for the next reply, and a system-generated
// turn never carries it.
func TestSentinelInjectSettledByDelivery(t *testing.T) {
	defer goleak.VerifyNone(t)
	observe, settled := settledOn()
	a, _ := newSentinelApp(t, false, []llm.Turn{{Content: "One."}, {Content: "Two."}, {Content: "Three."}}, observe)
	defer a.Close(context.Background())
	ctx := context.Background()
	sys := a.Sentinel()
	failing := true
	var got []string
	a.Hub().Register("telegram", spine.OutletFunc(func(_ context.Context, m spine.Message) error {
		if failing {
			return errors.New("telegram down")
		}
		got = append(got, m.Content)
		return nil
	}))
	if r := sys.Injector.Queue(ctx, executor.Nudge{Session: "telegram:7", Message: "Passport office closes at 16:00."}); !r.Queued {
		t.Fatalf("%+v", r)
	}
	send := func(origin spine.Origin) spine.Result {
		t.Helper()
		tk, err := a.Scheduler().Submit(spine.TurnRequest{Origin: origin, Channel: "telegram", ChatID: "7", Content: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := tk.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		<-settled
		return res
	}
	charged := func() int { return sys.Policy.SnapshotState().DayUsed }
	if res := send(spine.OriginUser); res.Delivered || !strings.Contains(res.Reply, "Passport") {
		t.Fatalf("first reply: %+v", res)
	}
	if ns, _ := sys.Feedback.Nudges(5); len(ns) != 0 || charged() != 1 {
		t.Fatalf("undelivered inject reported, or not charged once: feedback %+v charged %d", ns, charged())
	}
	if p, _ := sys.Injector.Pending(ctx); len(p["telegram:7"]) != 1 {
		t.Fatalf("undelivered inject not requeued: %+v", p)
	}
	failing = false
	if res := send(spine.OriginCron); strings.Contains(res.Reply, "Passport") {
		t.Fatalf("system-generated turn carried the inject: %q", res.Reply)
	}
	if res := send(spine.OriginUser); !res.Delivered || !strings.Contains(res.Reply, "Passport") {
		t.Fatalf("requeued inject did not ride the next reply: %+v", res)
	}
	if ns, _ := sys.Feedback.Nudges(5); len(ns) != 1 || ns[0].Action != policy.ActionInject || charged() != 1 {
		t.Fatalf("delivered inject: feedback %+v charged %d", ns, charged())
	}
	if p, _ := sys.Injector.Pending(ctx); len(p) != 0 {
		t.Fatalf("delivered inject still queued: %+v", p)
	}
}

// A discovery menu may offer to run only tools that read: a pick shows
// the tool's name, not its arguments, so it is no consent to side effects.
func TestMenuOffersOnlyReadingTools(t *testing.T) {
	rt, _ := newApp(t, true, llm.NewScripted(nil))
	rt.Tools().RegisterExternal(&fakeMCPTool{name: "srv__delete_everything", desc: "An MCP tool: who knows what it changes."})
	d := rt.Sentinel().Discoverer
	if d == nil || d.ToolNames == nil {
		t.Fatal("the runtime's discoverer is offered no tools")
	}
	offered := map[string]bool{}
	for _, ti := range d.ToolNames() {
		offered[ti.Name] = true
	}
	for _, name := range []string{"read_file", "list_dir", "memory_search"} {
		if !offered[name] {
			t.Errorf("%s not offered (offered %v)", name, offered)
		}
	}
	for _, name := range append(menuToolsExcluded(), "srv__delete_everything", "remember") {
		if offered[name] {
			t.Errorf("%s offered to a menu", name)
		}
	}
}
