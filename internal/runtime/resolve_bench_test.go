package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/spine"
)

// BenchmarkResolve measures the resolver on every proactive message: with
// a surface attached (the common case) and with none, falling through
// forward to the session store's most recent real channel.
func BenchmarkResolve(b *testing.B) {
	for _, bc := range []struct {
		name     string
		attached bool
	}{{"attached", true}, {"recent_session", false}} {
		b.Run(bc.name, func(b *testing.B) {
			rt, clk := benchRuntime(b)
			rt.Hub().Register("telegram", &collector{})
			for i := range 20 {
				addSessionB(b, rt, "tui", "s"+string(rune('a'+i)), clk.Now().Add(-time.Duration(i)*time.Minute))
			}
			addSessionB(b, rt, "telegram", "42", clk.Now().Add(-time.Hour))
			if bc.attached {
				if _, err := rt.Attach(context.Background(), CLIConversation, &collector{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if ts := rt.Resolve("tui", "main"); len(ts) != 1 {
					b.Fatal(ts)
				}
			}
		})
	}
}

// BenchmarkSurfaceDeliver measures one message through the hub's cli
// outlet to an attached surface.
func BenchmarkSurfaceDeliver(b *testing.B) {
	rt, _ := benchRuntime(b)
	if _, err := rt.Attach(context.Background(), CLIConversation, SurfaceFunc(func(context.Context, spine.Message) error { return nil })); err != nil {
		b.Fatal(err)
	}
	m := spine.Message{Channel: CLIChannel, ChatID: CLIChatID, Content: "Stand up and stretch.", Proactive: true}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := rt.Hub().Post(ctx, m); err != nil {
			b.Fatal(err)
		}
	}
}
