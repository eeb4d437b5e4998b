package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
)

// onlyIn is a tool offered in one conversation only.
type onlyIn struct{ conv string }

func (onlyIn) Name() string               { return "only_in" }
func (onlyIn) Description() string        { return "offered in one conversation" }
func (onlyIn) Parameters() map[string]any { return map[string]any{"type": "object"} }
func (onlyIn) Run(context.Context, json.RawMessage) (string, error) {
	return "ran", nil
}
func (o onlyIn) OfferedIn(_ context.Context, conv string) bool { return conv == o.conv }

func toolNames(ts []llm.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

func TestToolsOfferedPerConversation(t *testing.T) {
	cases := []struct {
		name, chatID string
		offered      bool
	}{
		{"offered conversation", "direct", true},
		{"other conversation", "other", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, text("ok"))
			f.agent.Tools().Register(onlyIn{conv: "cli:direct"})
			req := userReq("hi")
			req.ChatID = c.chatID
			if _, err := runDirect(t, f.agent, req); err != nil {
				t.Fatal(err)
			}
			names := toolNames(f.prov.reqs[0].Tools)
			got := strings.Contains(strings.Join(names, ","), "only_in")
			if got != c.offered {
				t.Fatalf("only_in offered = %v in %s, want %v (tools %v)", got, req.Conversation(), c.offered, names)
			}
			if len(names) < 2 {
				t.Fatalf("the unconditional tools went missing: %v", names)
			}
		})
	}
}

func TestTurnContextInSystemMessageOfEveryModelCall(t *testing.T) {
	f := newFixture(t, call("read_file", `{"path":"x"}`), text("done"))
	var seen []string
	f.agent.AddTurnContext(func(_ context.Context, conv string) string {
		seen = append(seen, conv)
		return "Project membership: member."
	})
	f.agent.AddTurnContext(func(context.Context, string) string { return "" })
	if _, err := runDirect(t, f.agent, userReq("hi")); err != nil {
		t.Fatal(err)
	}
	if len(f.prov.reqs) != 2 {
		t.Fatalf("model calls = %d, want 2", len(f.prov.reqs))
	}
	for i, r := range f.prov.reqs {
		if sys := r.Messages[0]; sys.Role != llm.RoleSystem || !strings.Contains(sys.Content, "Project membership: member.") {
			t.Fatalf("call %d: fact not in system message: %q", i, sys.Content)
		}
	}
	if len(seen) != 1 || seen[0] != "cli:direct" {
		t.Fatalf("context provider calls = %v, want one for cli:direct", seen)
	}
	// Persisted history must not carry the per-turn context.
	recent, err := f.sessions.Recent(context.Background(), "cli:direct", 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range recent {
		if strings.Contains(m.Content, "Project membership") {
			t.Fatalf("turn context persisted: %+v", m)
		}
	}
}

// BenchmarkOfferedTools is the per-turn cost of building the tool list
// with one conversation-dependent tool among the builtins.
func BenchmarkOfferedTools(b *testing.B) {
	f := newFixture(b)
	f.agent.Tools().Register(onlyIn{conv: "cli:direct"})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if len(f.agent.offeredTools(ctx, "cli:other", nil)) != 2 {
			b.Fatal("wrong tool list")
		}
	}
}
