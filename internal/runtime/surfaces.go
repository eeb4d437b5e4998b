package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/questions"
	"github.com/raven-agent/raven/internal/spine"
)

// CLIChannel is the terminal chat's channel; its one conversation is
// cli:direct.
const (
	CLIChannel = "cli"
	CLIChatID  = "direct"
	// CLIConversation is the terminal's conversation.
	CLIConversation = CLIChannel + ":" + CLIChatID
)

// Surface is one attached interactive view of a conversation: a terminal
// REPL, a TUI connection, a one-shot chat. It shows what Raven sends there.
type Surface interface {
	Deliver(ctx context.Context, m spine.Message) error
}

// Asker is a Surface that can put an ask_user question to the owner itself
// (a TUI draws clarify.request; a one-shot terminal reads stdin). Surfaces
// without it get the question as text through Deliver.
type Asker interface {
	Ask(req questions.ClarifyRequest)
}

// SurfaceFunc adapts a function to a Surface.
type SurfaceFunc func(ctx context.Context, m spine.Message) error

// Deliver calls f.
func (f SurfaceFunc) Deliver(ctx context.Context, m spine.Message) error { return f(ctx, m) }

// surfaces tracks which surfaces are attached to which conversation, most
// recently attached last, so the target resolver knows who is really there.
type surfaces struct {
	mu    sync.Mutex
	seq   int64
	convs map[string][]attachment
	order []string // conversations by last attach, most recent last
}

type attachment struct {
	id int64
	s  Surface
}

func newSurfaces() *surfaces { return &surfaces{convs: map[string][]attachment{}} }

// attach adds s to conv and returns its detach. Surfaces are never
// compared: attaching the same one twice shows it everything twice.
func (ss *surfaces) attach(conv string, s Surface) (detach func()) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.seq++
	id := ss.seq
	ss.convs[conv] = append(ss.convs[conv], attachment{id: id, s: s})
	ss.touch(conv)
	var once sync.Once
	return func() { once.Do(func() { ss.detach(conv, id) }) }
}

func (ss *surfaces) touch(conv string) {
	for i, c := range ss.order {
		if c == conv {
			ss.order = append(ss.order[:i], ss.order[i+1:]...)
			break
		}
	}
	ss.order = append(ss.order, conv)
}

func (ss *surfaces) detach(conv string, id int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	list := ss.convs[conv]
	for i, a := range list {
		if a.id == id {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) > 0 {
		ss.convs[conv] = list
		return
	}
	delete(ss.convs, conv)
	for i, c := range ss.order {
		if c == conv {
			ss.order = append(ss.order[:i], ss.order[i+1:]...)
			break
		}
	}
}

// of returns the surfaces attached to conv.
func (ss *surfaces) of(conv string) []Surface {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]Surface, len(ss.convs[conv]))
	for i, a := range ss.convs[conv] {
		out[i] = a.s
	}
	return out
}

// attached reports whether anyone is attached to conv.
func (ss *surfaces) attached(conv string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.convs[conv]) > 0
}

// latest returns the most recently attached conversation on channel ("" for
// any interactive channel).
func (ss *surfaces) latest(channel string) (string, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for i := len(ss.order) - 1; i >= 0; i-- {
		ch, _, _ := spine.SplitConversationKey(ss.order[i])
		if channel == "" || ch == channel {
			return ss.order[i], true
		}
	}
	return "", false
}

// list returns the attached conversations, most recent first.
func (ss *surfaces) list() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]string, 0, len(ss.order))
	for i := len(ss.order) - 1; i >= 0; i-- {
		out = append(out, ss.order[i])
	}
	return out
}

// deliver is the hub outlet of cli and tui: the message reaches the
// surfaces attached to its conversation. Reaching nobody is an error
// wrapping spine.ErrNoOutlet, so a nudge or cron delivery to an unwatched
// surface is not counted (or charged) as delivered.
func (ss *surfaces) deliver(ctx context.Context, m spine.Message) error {
	conv := spine.ConversationKey(m.Channel, m.ChatID)
	sent := 0
	var lastErr error
	for _, s := range ss.of(conv) {
		if err := s.Deliver(ctx, m); err != nil {
			lastErr = err
			continue
		}
		sent++
	}
	if sent > 0 {
		return nil
	}
	if lastErr != nil {
		return fmt.Errorf("%w %q: %s: %w", spine.ErrNoOutlet, m.Channel, conv, lastErr)
	}
	return fmt.Errorf("%w %q: nobody attached to %s", spine.ErrNoOutlet, m.Channel, conv)
}

// ask hands an ask_user question to the Askers attached to conv and reports
// whether one took it.
func (ss *surfaces) ask(conv string, req questions.ClarifyRequest) bool {
	took := false
	for _, s := range ss.of(conv) {
		if a, ok := s.(Asker); ok {
			a.Ask(req)
			took = true
		}
	}
	return took
}

// Attach makes s a surface of conv ("cli:direct", "tui:main") until the
// returned detach is called: messages for conv reach it and the target
// resolver counts conv as attached.
func (r *Runtime) Attach(ctx context.Context, conv string, s Surface) (detach func(), err error) {
	return r.attach(conv, s)
}

// AttachOwner is Attach for the owner's own view (the chat REPL, a TUI):
// the owner's pending outbox items are delivered to s now, oldest first,
// and marked delivered once shown.
func (r *Runtime) AttachOwner(ctx context.Context, conv string, s Surface) (detach func(), err error) {
	detach, err = r.attach(conv, s)
	if err == nil {
		r.deliverOutbox(ctx, conv, s)
	}
	return detach, err
}

func (r *Runtime) attach(conv string, s Surface) (func(), error) {
	ch, _, ok := spine.SplitConversationKey(conv)
	if !ok || (ch != CLIChannel && ch != channels.TUIChannel) {
		return nil, fmt.Errorf("runtime: attach %q: %w", conv, ErrNotSurface)
	}
	return r.surfaces.attach(conv, s), nil
}

// Attached lists the conversations with a surface attached, most recent first.
func (r *Runtime) Attached() []string { return r.surfaces.list() }
