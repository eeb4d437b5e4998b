package chat

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/controlapi"
	"github.com/raven-agent/raven/internal/controlapi/api"
	"github.com/raven-agent/raven/internal/spine"
)

// FollowOptions configure Follow.
type FollowOptions struct {
	// Conversation to attach to, e.g. "cli:direct".
	Conversation string
	// Dial connects and authenticates to the gateway (see DialGateway).
	Dial func(ctx context.Context) (*controlapi.Client, error)
	// Deliver shows one message pushed by the gateway; the terminal passes
	// its CLI outlet so proactive messages keep their marker.
	Deliver func(ctx context.Context, m spine.Message) error
	Clock   clock.Clock  // default clock.Real()
	Logger  *slog.Logger // default discards
	// MinBackoff and MaxBackoff bound the wait between dial attempts
	// (defaults 200ms and 5s). A terminal with no gateway beside it just
	// keeps knocking at this pace, which is what lets a gateway started
	// later be picked up.
	MinBackoff, MaxBackoff time.Duration
	// OnAttach, if set, is called after each successful chat.attach.
	OnAttach func()
}

// Follow keeps the terminal attached to conversation on the gateway, so
// messages the gateway produces for it (Sentinel nudges, cron deliveries)
// are shown here. It reconnects quietly when the gateway restarts or is not
// there yet, and returns nil once ctx ends.
func Follow(ctx context.Context, o FollowOptions) error {
	if o.Dial == nil || o.Deliver == nil {
		return errors.New("chat: Follow needs Dial and Deliver")
	}
	if _, _, ok := spine.SplitConversationKey(o.Conversation); !ok {
		return errors.New("chat: Follow: conversation must be channel:chat_id")
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 200 * time.Millisecond
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = max(5*time.Second, o.MinBackoff)
	}
	log := o.Logger.With("component", "chat-follow", "conversation", o.Conversation)
	attach := func(ctx context.Context) (*controlapi.Client, error) {
		c, err := o.Dial(ctx)
		if err != nil {
			return nil, err
		}
		if _, err := controlapi.Invoke(ctx, c, api.ChatAttach, api.ChatAttachParams{Conversation: o.Conversation}); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	refused := false
	for {
		c, err := controlapi.DialRetry(ctx, attach, controlapi.RetryOptions{
			Clock: o.Clock, Min: o.MinBackoff, Max: o.MaxBackoff,
			OnError: func(attempt int, err error) {
				if attempt == 1 {
					log.Debug("gateway not reachable; retrying", "err", err)
				}
			},
		})
		if ctx.Err() != nil {
			if c != nil {
				c.Close()
			}
			return nil
		}
		if err != nil {
			// DialRetry gives up at once on a refused token. The gateway
			// rewrites the token file when it rotates the operator token,
			// so wait and try again rather than go deaf for good.
			lvl := slog.LevelDebug
			if !refused {
				lvl, refused = slog.LevelWarn, true // once: the terminal is interactive
			}
			log.Log(ctx, lvl, "gateway refused the operator token; retrying later", "err", err)
			if clock.Sleep(ctx, o.Clock, o.MaxBackoff) != nil {
				return nil
			}
			continue
		}
		log.Debug("attached to gateway")
		refused = false
		if o.OnAttach != nil {
			o.OnAttach()
		}
		pump(ctx, c, o, log)
		c.Close()
		if ctx.Err() != nil {
			return nil
		}
		log.Debug("gateway connection ended; reconnecting", "err", c.Err())
	}
}

// pump delivers the conversation's chat.message notifications until the
// connection or ctx ends.
func pump(ctx context.Context, c *controlapi.Client, o FollowOptions, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case n, ok := <-c.Notifications():
			if !ok {
				return
			}
			cm, ok, err := controlapi.DecodeNotification(n, api.NotifyChatMessage)
			if !ok {
				continue
			}
			if err != nil {
				log.Warn("malformed chat.message from gateway", "err", err)
				continue
			}
			if cm.Conversation != o.Conversation {
				continue
			}
			ch, id, _ := spine.SplitConversationKey(cm.Conversation)
			m := spine.Message{Channel: ch, ChatID: id, Content: cm.Content, Origin: spine.Origin(cm.Origin),
				Proactive: cm.Proactive, Reply: cm.Reply}
			if err := o.Deliver(ctx, m); err != nil {
				log.Warn("gateway message not shown", "err", err)
			}
		}
	}
}
