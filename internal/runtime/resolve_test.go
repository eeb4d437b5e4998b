package runtime

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/cron"
	"github.com/raven-agent/raven/internal/heartbeat"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
)

// collector is an outlet or surface that records what reached it.
type collector struct {
	mu  sync.Mutex
	got []spine.Message
}

func (c *collector) Deliver(_ context.Context, m spine.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, m)
	return nil
}

func (c *collector) contents() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.got {
		out = append(out, m.Content)
	}
	return out
}

func addSession(t *testing.T, rt *Runtime, channel, chatID string, at time.Time) {
	t.Helper()
	if err := rt.Sessions().Append(context.Background(), session.Entry{Message: llm.Message{Role: llm.RoleUser, Content: "hi"},
		Conversation: spine.ConversationKey(channel, chatID), Channel: channel, ChatID: chatID, Origin: "user", At: at}); err != nil {
		t.Fatal(err)
	}
}

// The one resolver, on the assembled runtime with the default config: an
// attached surface first, then channels.forward, then the most recent real
// channel, then the outbox — never an unwatched cli/tui.
func TestResolveTargets(t *testing.T) {
	outbox := []Target{{OutboxChannel, OutboxChatID}}
	cases := []struct {
		name     string
		forward  []string
		telegram bool     // this process has a telegram outlet
		attach   []string // in attach order
		sessions []string // "channel:chat", oldest first
		channel  string
		chatID   string
		want     []Target
	}{
		{name: "nothing anywhere: outbox", want: outbox},
		{name: "unwatched tui session is never a target", sessions: []string{"tui:main", "cli:direct"}, channel: "tui", chatID: "main", want: outbox},
		{name: "attached terminal", attach: []string{"cli:direct"}, forward: []string{"telegram:42"}, telegram: true, want: []Target{{"cli", "direct"}}},
		{name: "asked-for attached conversation", attach: []string{"cli:direct", "tui:main"}, channel: "cli", chatID: "direct", want: []Target{{"cli", "direct"}}},
		{name: "most recently attached otherwise", attach: []string{"cli:direct", "tui:main"}, channel: "tui", chatID: "other", want: []Target{{"tui", "main"}}},
		{name: "forward when nobody is attached", forward: []string{"telegram:42"}, telegram: true, channel: "tui", chatID: "main", want: []Target{{"telegram", "42"}}},
		{name: "forward without an outlet here is skipped", forward: []string{"telegram:42"}, want: outbox},
		{name: "most recent real session", telegram: true, sessions: []string{"telegram:7", "tui:main"}, want: []Target{{"telegram", "7"}}},
		{name: "real channel by name", telegram: true, sessions: []string{"telegram:7"}, attach: []string{"cli:direct"}, channel: "telegram", want: []Target{{"telegram", "7"}}},
		{name: "real channel with no outlet here falls through", attach: []string{"cli:direct"}, channel: "telegram", chatID: "42", want: []Target{{"cli", "direct"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt, clk := newApp(t, false, llm.NewScripted(nil), func(o *Options) { o.Config.Channels.Forward = tc.forward })
			if tc.telegram {
				rt.Hub().Register("telegram", &collector{})
			}
			for i, s := range tc.sessions {
				ch, id, _ := spine.SplitConversationKey(s)
				addSession(t, rt, ch, id, clk.Now().Add(time.Duration(i-len(tc.sessions))*time.Minute))
			}
			for _, conv := range tc.attach {
				if _, err := rt.Attach(context.Background(), conv, &collector{}); err != nil {
					t.Fatal(err)
				}
			}
			if got := rt.Resolve(tc.channel, tc.chatID); !slices.Equal(got, tc.want) {
				t.Fatalf("Resolve(%q, %q) = %v, want %v", tc.channel, tc.chatID, got, tc.want)
			}
		})
	}
}

// With the default config and nobody attached, a Sentinel nudge, a cron
// --deliver result and a heartbeat task's result all land in the outbox
// instead of being dropped; the owner's next attach shows each once.
func TestProactivePathsKeptUntilAttach(t *testing.T) {
	const tasks = "# Heartbeat\n## Tasks\n- At 9:00 on weekdays, send me the day's agenda.\n"
	prov := llm.NewScripted([]llm.Turn{
		{Content: "Stand up and stretch."},
		{ToolCalls: []llm.ToolCall{{ID: "d1", Name: heartbeat.DecisionTool, Arguments: `{"action":"run","tasks":"Send the agenda.","reason":"due"}`}}},
		{Content: "Agenda: standup at 10."},
	})
	rt, clk := newApp(t, false, prov)
	ctx := context.Background()

	res := rt.Sentinel().Dispatcher.Dispatch(ctx, executor.Nudge{Message: "The passport office closes at 16:00.", Topic: "passport"})
	if !res.Verdict.Allow || !res.Delivered || !slices.Equal(res.Targets, []string{"outbox:owner"}) {
		t.Fatalf("nudge = %+v", res)
	}
	job, err := cron.NewJob(cron.Spec{Name: "stretch", Message: "remind me to stretch", Every: "1h", Deliver: true, Channel: "cli"}, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if job, err = rt.CronStore().Add(ctx, job); err != nil {
		t.Fatal(err)
	}
	if run, err := rt.FireCron(ctx, job.ID); err != nil || run.Outcome != cron.StatusDelivered {
		t.Fatalf("cron fire = %+v, %v", run, err)
	}
	if err := os.WriteFile(rt.Paths().Heartbeat(), []byte(tasks), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := rt.Heartbeat().TickOnce(ctx); err != nil || o.Route != heartbeat.RouteRun || len(o.Delivered) != 1 || o.Delivered[0].Channel != OutboxChannel {
		t.Fatalf("heartbeat = %+v, %v", o, err)
	}
	if n, err := rt.Outbox().Count(ctx); err != nil || n != 3 {
		t.Fatalf("outbox holds %d (%v), want 3", n, err)
	}

	var screen collector
	if _, err := rt.AttachOwner(ctx, CLIConversation, &screen); err != nil {
		t.Fatal(err)
	}
	want := []string{"The passport office closes at 16:00.", "Stand up and stretch.", "Agenda: standup at 10."}
	if got := screen.contents(); !slices.Equal(got, want) {
		t.Fatalf("attach showed %q, want %q", got, want)
	}
	for _, m := range screen.got {
		if !m.Proactive || m.Channel != "cli" || m.ChatID != "direct" {
			t.Fatalf("outbox item shown as %+v", m)
		}
	}
	if n, _ := rt.Outbox().Count(ctx); n != 0 {
		t.Fatalf("%d items still pending after the attach", n)
	}
	// A second surface attaching later is not shown them again.
	var other collector
	if _, err := rt.AttachOwner(ctx, "tui:main", &other); err != nil {
		t.Fatal(err)
	}
	if got := other.contents(); len(got) != 0 {
		t.Fatalf("second attach showed %q again", got)
	}
	// Once attached, the next nudge goes straight to the surface.
	res = rt.Sentinel().Dispatcher.Dispatch(ctx, executor.Nudge{Message: "Bins go out tonight.", Topic: "bins"})
	if !res.Delivered || !strings.HasPrefix(strings.Join(res.Targets, ","), "tui:main") {
		t.Fatalf("nudge with a surface attached = %+v", res)
	}
}

// A subagent's result for a surface nobody watches any more is kept for
// the owner rather than logged as undelivered and lost.
func TestSubagentResultForClosedSurfaceKept(t *testing.T) {
	rt, _ := newApp(t, false, llm.NewScripted([]llm.Turn{{Content: "Trains: 07:03 direct."}}))
	ctx := context.Background()
	if _, err := rt.Subagents().Spawn(ctx, "find trains", "tui", "main"); err != nil {
		t.Fatal(err)
	}
	rt.Subagents().Wait()
	var screen collector
	if _, err := rt.AttachOwner(ctx, "tui:main", &screen); err != nil {
		t.Fatal(err)
	}
	if got := screen.contents(); !slices.Equal(got, []string{"Trains: 07:03 direct."}) {
		t.Fatalf("attach showed %q", got)
	}
}

// A broadcast reaches every attached surface and every forward channel;
// with none, it is kept like any other message.
func TestResolveAll(t *testing.T) {
	rt, _ := newApp(t, false, llm.NewScripted(nil), func(o *Options) { o.Config.Channels.Forward = []string{"telegram:42"} })
	if got, want := rt.ResolveAll(), []Target{{OutboxChannel, OutboxChatID}}; !slices.Equal(got, want) {
		t.Fatalf("ResolveAll with nothing = %v, want %v", got, want)
	}
	rt.Hub().Register("telegram", &collector{})
	for _, conv := range []string{"cli:direct", "tui:main"} {
		if _, err := rt.Attach(context.Background(), conv, &collector{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := rt.ResolveAll(), []Target{{"tui", "main"}, {"cli", "direct"}, {"telegram", "42"}}; !slices.Equal(got, want) {
		t.Fatalf("ResolveAll = %v, want %v", got, want)
	}
}
