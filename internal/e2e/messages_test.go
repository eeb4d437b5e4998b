package e2e

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// Stopping a turn never prints the raw "context canceled": `chat -m`
// interrupted says "cancelled" and exits 130; the REPL's Ctrl-C says
// "(cancelled)", and Ctrl-D then exits 0 with nothing more.
func TestCancelledTurnsSayCancelled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		stop func(p *Proc)
		code int
		want string // in stdout+stderr
	}{
		{"chat -m interrupted", []string{"chat", "-m", "do the long thing"},
			func(p *Proc) { p.Signal(syscall.SIGINT) }, 130, "raven: chat -m: cancelled"},
		{"REPL Ctrl-C then Ctrl-D", []string{"chat"},
			func(p *Proc) {
				p.Send("\x03") // Ctrl-C as the terminal sends it
				p.WaitStdout(15*time.Second, "(cancelled)")
				p.CloseStdin() // Ctrl-D
			}, 0, "(cancelled)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, Options{})
			hold := make(chan struct{})
			defer close(hold)
			e.Model.Enqueue(fakeopenai.Reply{Text: "too late", Wait: hold})
			p := e.Start(tt.args...)
			if tt.args[len(tt.args)-1] == "chat" {
				p.Send("do the long thing\n")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			if _, err := e.Model.WaitRequests(ctx, 1); err != nil {
				t.Fatalf("the turn never reached the model: %v\nstderr:\n%s", err, p.Stderr())
			}
			tt.stop(p)
			r := p.Wait(20 * time.Second)
			out := r.Stdout + r.Stderr
			if r.Code != tt.code || !strings.Contains(out, tt.want) || strings.Contains(out, "context canceled") {
				t.Fatalf("exit %d (want %d), output must contain %q and never \"context canceled\":\n%s", r.Code, tt.code, tt.want, r)
			}
		})
	}
}
