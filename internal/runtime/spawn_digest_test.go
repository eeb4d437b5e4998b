package runtime

import (
	"context"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/executor"
	"github.com/raven-agent/raven/internal/spine"
)

// chanSurface hands each delivery to a test waiting on it.
type chanSurface chan spine.Message

func (c chanSurface) Deliver(_ context.Context, m spine.Message) error { c <- m; return nil }

// A Sentinel spawn_agent's result comes back through the dispatcher under
// the spawn's nudge id: recorded in the owner's session (the next turn sees
// the digest) and tracked for feedback, not posted past both by the
// subagent manager.
func TestSpawnDigestGoesThroughDispatcher(t *testing.T) {
	rt, clk := newApp(t, false, llm.NewScripted([]llm.Turn{{Content: "Trains: 07:03 direct, 07:33 one change."}}))
	ctx := context.Background()
	screen := make(chanSurface, 4)
	if _, err := rt.AttachOwner(ctx, CLIConversation, screen); err != nil {
		t.Fatal(err)
	}
	res := rt.Sentinel().Spawn.Dispatch(ctx, executor.SpawnRequest{Task: "Compare Friday trains to Leeds.", Session: CLIConversation, Topic: "trains"})
	if !res.Delivered || res.NudgeID == "" {
		t.Fatalf("spawn = %+v", res)
	}
	var m spine.Message
	select {
	case m = <-screen:
	case <-time.After(10 * time.Second):
		t.Fatal("the micro-agent's result never reached the owner")
	}
	if m.Origin != spine.OriginSentinel || !strings.Contains(m.Content, "07:03 direct") {
		t.Fatalf("delivered %+v, want the digest from the Sentinel's dispatcher", m)
	}
	// The dispatcher records a delivery just after the post returned, on
	// the micro-agent's goroutine: wait for the records, bounded.
	deadline := time.Now().Add(10 * time.Second)
	for {
		tracked, inSession := digestRecorded(t, rt, clk.Now(), res.NudgeID)
		if tracked && inSession {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("digest %s: tracked for feedback %v, in %s's session %v", res.NudgeID, tracked, CLIConversation, inSession)
		}
		goruntime.Gosched()
	}
}

// digestRecorded reports whether nudgeID's digest is in the feedback log
// and in the owner's session.
func digestRecorded(t *testing.T, rt *Runtime, now time.Time, nudgeID string) (tracked, inSession bool) {
	t.Helper()
	_, tracked, err := rt.Sentinel().Feedback.Lookup(nudgeID)
	if err != nil {
		t.Fatal(err)
	}
	es, err := rt.Sessions().Since(context.Background(), now.Add(-time.Hour), 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Conversation == CLIConversation && strings.Contains(e.Content, "nudge_id="+nudgeID) && strings.Contains(e.Content, "07:03 direct") {
			inSession = true
		}
	}
	return tracked, inSession
}
