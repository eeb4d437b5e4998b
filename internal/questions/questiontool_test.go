package questions

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/tools"
)

func TestQuestionToolReturnsPendingRequestAtOnce(t *testing.T) {
	h := newHarness(t, nil)
	tool := NewQuestionTool(h.store)
	ctx := tools.WithTurn(context.Background(), tools.TurnInfo{Conversation: ownerConv, Channel: "tui", ChatID: "main"})
	out, err := tool.Run(ctx, json.RawMessage(`{"question":"Which test style do you prefer?","options":["table-driven","BDD"],"allow_text":true}`))
	if err != nil {
		t.Fatal(err)
	}
	snap, _ := h.store.Get(context.Background(), operator, GetParams{Conversation: ownerConv})
	if snap.Status != StatusPending || !strings.Contains(out, snap.Request.RequestID) || snap.Request.Kind != "choice" || !snap.Request.AllowText {
		t.Fatalf("tool result %q, snapshot %+v", out, snap)
	}
	if len(h.eventsOf(EventInputRequested)) != 1 {
		t.Fatal("no input_requested event")
	}
	// One at a time.
	_, err = tool.Run(ctx, json.RawMessage(`{"question":"And another?"}`))
	wantCode(t, err, CodeConflict)

	tests := map[string]string{
		"unknown field":  `{"question":"q","urgent":true}`,
		"too many":       `{"question":"q","options":["1","2","3","4","5","6","7","8","9"]}`,
		"oversize":       `{"question":"` + strings.Repeat("q", MaxQuestionLen+1) + `"}`,
		"missing":        `{}`,
		"wrong type":     `{"question":1}`,
		"oversize label": `{"question":"q","options":["` + strings.Repeat("o", MaxOptionLen+1) + `"]}`,
	}
	for name, args := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := tool.Run(ctx, json.RawMessage(args))
			wantCode(t, err, CodeInvalidParams)
		})
	}
	// Not an owner conversation.
	if _, err := h.store.CreateConversation(context.Background(), ConversationSpec{ID: "room:1", Kind: KindRoom, Workspace: h.ws, Owner: tuiOwner, OwnerGeneration: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = tool.Run(tools.WithTurn(context.Background(), tools.TurnInfo{Conversation: "room:1"}), json.RawMessage(`{"question":"q"}`))
	wantCode(t, err, CodeUnavailable)
}

func BenchmarkInputAnswer(b *testing.B) {
	h := newHarness(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		s := h.ask()
		params := raw(b, answerFor(s, 0))
		b.StartTimer()
		if err := h.inputAnswer(ctx, operator, params); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAskAndAnswer(b *testing.B) {
	h := newHarness(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s := h.ask()
		if err := h.inputAnswer(ctx, operator, raw(b, answerFor(s, 0))); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDuplicateAnswer(b *testing.B) {
	h := newHarness(b, nil)
	ctx := context.Background()
	s := h.ask()
	params := raw(b, answerFor(s, 0))
	if err := h.inputAnswer(ctx, operator, params); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := h.inputAnswer(ctx, operator, params); err != nil {
			b.Fatal(err)
		}
	}
}
