package sentinel

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/feedback"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

// Every truncation on the way from the model or the owner into the
// feedback log and the planner prompt cuts on a rune boundary: a reason or
// a message of multi-byte text never ends in a broken character (which
// JSON would turn into U+FFFD).
func TestTruncationsKeepUTF8(t *testing.T) {
	h := newSysHarness(t, defaultPolicy)
	ctx := context.Background()
	long := strings.Repeat("日", 200) // 600 bytes; every limit falls inside a rune
	h.prov.push(decisionJSON("nudge", "Über "+long, map[string]any{"target_session": "telegram:42"}))
	out := h.sys.Runner.TickOnce(ctx)
	if !out.Delivered() {
		t.Fatalf("%+v", out)
	}
	reason := "a" + strings.Repeat("é", 300) // the limit (500) splits an é
	args, _ := json.Marshal(map[string]string{"verdict": "dismissed", "nudge_id": out.NudgeID, "reason": reason})
	reg := tools.NewRegistry(h.sys.FeedbackTool())
	turn := tools.WithTurn(ctx, tools.TurnInfo{Origin: spine.OriginUser, Conversation: "telegram:42", Channel: "telegram", ChatID: "42"})
	if msg, err := reg.Run(turn, llm.ToolCall{Name: feedback.ToolName, Arguments: string(args)}); err != nil {
		t.Fatal(msg, err)
	}
	recs, err := h.sys.Feedback.Nudges(1)
	if err != nil || len(recs) != 1 {
		t.Fatal(recs, err)
	}
	for name, s := range map[string]string{"content": recs[0].Content, "verdict reason": recs[0].VerdictReason} {
		if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
			t.Errorf("%s split a character: %q", name, s[max(0, len(s)-12):])
		}
	}
	if !strings.HasPrefix(recs[0].VerdictReason, "aéé") {
		t.Errorf("reason %q", recs[0].VerdictReason[:10])
	}
	pc := PlannerContext{Now: sysT0, ActiveSessions: []ActiveSession{{Key: "telegram:42", LastUser: "x" + long, LastAssistant: "yy" + long}}}
	if p := RenderContext(pc); !utf8.ValidString(p) {
		t.Error("planner prompt has a split character")
	}
}
