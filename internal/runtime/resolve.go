package runtime

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/spine"
)

// ErrNotSurface is returned by Attach for a conversation that is not on an
// interactive channel (cli, tui).
var ErrNotSurface = errors.New("not an interactive surface (want cli:ID or tui:ID)")

// Target is one place a proactive message is delivered.
type Target struct {
	Channel string `json:"channel"`
	ChatID  string `json:"chat_id"`
}

// Key is "channel:chat_id".
func (t Target) Key() string { return spine.ConversationKey(t.Channel, t.ChatID) }

// RecentTargetWindow bounds how far back the "most recent real channel"
// fallback looks.
const RecentTargetWindow = 7 * 24 * time.Hour

// Resolve is the one target resolver of every proactive path — Sentinel
// nudges and menus, cron replies, heartbeat results. channel and chatID say
// where the message was meant to go (either may be empty). It returns, in
// order of preference:
//
//  1. a real channel (telegram, webhook) asked for by name, when this
//     process has its outlet;
//  2. an attached interactive surface: the asked-for conversation when
//     attached, else the most recently attached one;
//  3. the configured channels.forward entries;
//  4. the owner's most recent session on a real channel;
//  5. the outbox, which keeps the message until the owner next attaches.
//
// An ephemeral surface (cli, tui) nobody is attached to is never returned.
func (r *Runtime) Resolve(channel, chatID string) []Target {
	if channel != "" && !spine.IsEphemeral(channel) && channel != OutboxChannel {
		if t, ok := r.realTarget(channel, chatID); ok {
			return []Target{t}
		}
	}
	if ts := r.attachedTarget(channel, chatID); len(ts) > 0 {
		return ts
	}
	if ts := r.forwardTargets(); len(ts) > 0 {
		return ts
	}
	if t, ok := r.recentRealTarget(); ok {
		return []Target{t}
	}
	return []Target{{Channel: OutboxChannel, ChatID: OutboxChatID}}
}

// ResolveAll is the broadcast form of Resolve: every attached surface and
// every forward channel; with none of them, the most recent real channel,
// else the outbox.
func (r *Runtime) ResolveAll() []Target {
	var out []Target
	for _, conv := range r.surfaces.list() {
		ch, id, _ := spine.SplitConversationKey(conv)
		out = append(out, Target{Channel: ch, ChatID: id})
	}
	out = append(out, r.forwardTargets()...)
	if len(out) > 0 {
		return out
	}
	return r.Resolve("", "")
}

func (r *Runtime) attachedTarget(channel, chatID string) []Target {
	if spine.IsEphemeral(channel) && chatID != "" {
		if conv := spine.ConversationKey(channel, chatID); r.surfaces.attached(conv) {
			return []Target{{Channel: channel, ChatID: chatID}}
		}
	}
	conv, ok := r.surfaces.latest("")
	if !ok {
		return nil
	}
	ch, id, _ := spine.SplitConversationKey(conv)
	return []Target{{Channel: ch, ChatID: id}}
}

// realTarget fills a real channel's chat from its most recent session.
func (r *Runtime) realTarget(channel, chatID string) (Target, bool) {
	if !r.hub.Has(channel) {
		return Target{}, false
	}
	if chatID == "" {
		chatID, _ = r.sessions.LastChatID(r.ctx, channel)
	}
	if chatID == "" {
		return Target{}, false
	}
	return Target{Channel: channel, ChatID: chatID}, true
}

func (r *Runtime) forwardTargets() []Target {
	var out []Target
	seen := map[Target]bool{}
	for _, f := range r.Config().Channels.Forward {
		ch, id, _ := strings.Cut(strings.TrimSpace(f), ":")
		if ch == "" || spine.IsEphemeral(ch) {
			continue
		}
		if t, ok := r.realTarget(ch, id); ok && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

func (r *Runtime) recentRealTarget() (Target, bool) {
	ctx, cancel := context.WithTimeout(r.ctx, 5*time.Second)
	defer cancel()
	ss, err := r.sessions.Active(ctx, r.clk.Now().Add(-RecentTargetWindow))
	if err != nil {
		r.log.Warn("target resolver: sessions unavailable", "err", err)
		return Target{}, false
	}
	for _, s := range ss {
		if s.Channel == "" || s.ChatID == "" || spine.IsEphemeral(s.Channel) || s.Channel == OutboxChannel {
			continue
		}
		if r.hub.Has(s.Channel) {
			return Target{Channel: s.Channel, ChatID: s.ChatID}, true
		}
	}
	return Target{}, false
}

// postOrResolve posts a proactive message where it was addressed; when that
// surface is gone (a subagent's result for a TUI since closed), it goes
// where Resolve says instead — the outbox at worst — never nowhere.
func (r *Runtime) postOrResolve(ctx context.Context, m spine.Message) error {
	err := r.hub.Post(ctx, m)
	if err == nil || !errors.Is(err, spine.ErrNoOutlet) || !spine.IsEphemeral(m.Channel) {
		return err
	}
	for _, t := range r.Resolve(m.Channel, m.ChatID) {
		m.Channel, m.ChatID = t.Channel, t.ChatID
		if err = r.hub.Post(ctx, m); err == nil {
			return nil
		}
	}
	return err
}
