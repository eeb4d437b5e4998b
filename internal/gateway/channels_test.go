package gateway

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/auth"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/runtime"
	"github.com/raven-agent/raven/internal/spine"
)

// fakeNotifier is an attached control-API connection that records what it
// was sent.
type fakeNotifier struct {
	mu   sync.Mutex
	sent []sentNote
	got  chan sentNote // every note, for tests that wait on one
	done chan struct{}
}

type sentNote struct {
	method string
	params any
}

func newFakeNotifier() *fakeNotifier {
	return &fakeNotifier{got: make(chan sentNote, 64), done: make(chan struct{})}
}

func (f *fakeNotifier) Notify(method string, params any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, sentNote{method, params})
	select {
	case f.got <- sentNote{method, params}:
	default:
	}
	return nil
}

func (f *fakeNotifier) Principal(context.Context) (auth.Principal, error) {
	return auth.Principal{}, nil
}
func (f *fakeNotifier) Done() <-chan struct{} { return f.done }

func (f *fakeNotifier) notes() []sentNote {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentNote(nil), f.sent...)
}

var _ controlapi.Notifier = (*fakeNotifier)(nil)

// startTestGateway starts an in-process gateway with no network channels.
// shutdown stops it within a generous grace, once; cleanup calls it too.
func startTestGateway(t *testing.T, prov llm.Provider) (g *Gateway, shutdown func()) {
	t.Helper()
	p, err := config.NewPaths(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	g, err = Start(context.Background(), DaemonOptions{Runtime: runtime.Options{Paths: p, Config: cfg, Provider: prov}})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	shutdown = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := g.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
		})
	}
	t.Cleanup(shutdown)
	return g, shutdown
}

// A message to the terminal or the TUI that reached no attached client is
// not delivered: the outlet says so, so it is never charged as a nudge.
func TestEphemeralOutletsReportNobodyAttached(t *testing.T) {
	g, _ := startTestGateway(t, llm.NewScripted(nil))
	cases := []struct {
		name     string
		channel  string
		chatID   string
		attachTo string
		wantErr  bool
	}{
		{"tui nobody attached", "tui", "main", "", true},
		{"tui other conversation attached", "tui", "main", "tui:other", true},
		{"tui attached", "tui", "main", "tui:main", false},
		{"cli nobody attached", "cli", "direct", "", true},
		{"cli attached", "cli", "direct", "cli:direct", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := newFakeNotifier()
			defer close(n.done)
			if tc.attachTo != "" {
				if err := g.attach(context.Background(), tc.attachTo, n); err != nil {
					t.Fatal(err)
				}
			}
			err := g.Runtime().Hub().Post(context.Background(), spine.Message{Channel: tc.channel, ChatID: tc.chatID,
				Content: "nudge", Origin: spine.OriginSentinel, Proactive: true})
			if tc.wantErr {
				if !errors.Is(err, spine.ErrNoOutlet) {
					t.Fatalf("Post = %v, want ErrNoOutlet", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Post = %v", err)
			}
			if got := n.notes(); len(got) != 1 || got[0].method != api.NotifyChatMessage.Name() {
				t.Fatalf("notified %+v", got)
			}
		})
	}
}
