package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
)

// Surfaces of one conversation each get its messages until detached; with
// none left the outlet says nobody is there (spine.ErrNoOutlet), so the
// message is not counted delivered. Func surfaces are fine: none is ever
// compared.
func TestSurfacesAttachDetach(t *testing.T) {
	rt, _ := newApp(t, false, llm.NewScripted(nil))
	ctx := context.Background()
	var a, b int
	detachA, err := rt.Attach(ctx, CLIConversation, SurfaceFunc(func(context.Context, spine.Message) error { a++; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	detachB, err := rt.Attach(ctx, CLIConversation, SurfaceFunc(func(context.Context, spine.Message) error { b++; return nil }))
	if err != nil {
		t.Fatal(err)
	}
	post := func() error {
		return rt.Hub().Post(ctx, spine.Message{Channel: CLIChannel, ChatID: CLIChatID, Content: "hi", Proactive: true})
	}
	steps := []struct {
		name       string
		before     func()
		wantA      int
		wantB      int
		wantNobody bool
		attached   []string
	}{
		{name: "both attached", wantA: 1, wantB: 1, attached: []string{CLIConversation}},
		{name: "a detached", before: detachA, wantA: 1, wantB: 2, attached: []string{CLIConversation}},
		{name: "detach is idempotent", before: detachA, wantA: 1, wantB: 3, attached: []string{CLIConversation}},
		{name: "none left", before: detachB, wantA: 1, wantB: 3, wantNobody: true, attached: []string{}},
	}
	for _, st := range steps {
		if st.before != nil {
			st.before()
		}
		err := post()
		if st.wantNobody != errors.Is(err, spine.ErrNoOutlet) || (!st.wantNobody && err != nil) {
			t.Fatalf("%s: post = %v", st.name, err)
		}
		if a != st.wantA || b != st.wantB {
			t.Fatalf("%s: a=%d b=%d, want %d %d", st.name, a, b, st.wantA, st.wantB)
		}
		if got := rt.Attached(); len(got) != len(st.attached) {
			t.Fatalf("%s: attached %v, want %v", st.name, got, st.attached)
		}
	}
}

// One attach shows at most AttachBurst waiting items (a TUI connection's
// queue would drop it otherwise) and says how many still wait; the next
// attach shows those.
func TestAttachBurst(t *testing.T) {
	rt, _ := newApp(t, false, llm.NewScripted(nil))
	ctx := context.Background()
	total := AttachBurst + 7
	for i := range total {
		if err := rt.Hub().Post(ctx, spine.Message{Channel: OutboxChannel, ChatID: OutboxChatID, Origin: spine.OriginCron,
			Content: fmt.Sprintf("item %d", i), Proactive: true}); err != nil {
			t.Fatal(err)
		}
	}
	var first collector
	if _, err := rt.AttachOwner(ctx, "tui:main", &first); err != nil {
		t.Fatal(err)
	}
	got := first.contents()
	if len(got) != AttachBurst+1 || got[0] != "item 0" || !strings.HasPrefix(got[AttachBurst], "7 more messages wait") {
		t.Fatalf("first attach: %d messages, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
	var second collector
	if _, err := rt.AttachOwner(ctx, "tui:main", &second); err != nil {
		t.Fatal(err)
	}
	if got := second.contents(); len(got) != 7 || got[0] != fmt.Sprintf("item %d", AttachBurst) {
		t.Fatalf("second attach: %q", got)
	}
}
