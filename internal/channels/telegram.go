package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

// TelegramChannel is the channel name of the Telegram bot.
const TelegramChannel = "telegram"

// TelegramRefusal is sent once to a user outside the allow-list; later
// messages from them are dropped silently so a stranger cannot use the bot
// to make Raven spam replies.
const TelegramRefusal = "Sorry — this is a private assistant and it only talks to its owner."

// maxRefused bounds the memory of refused users; past it, refusals are
// silent rather than the map growing without bound.
const maxRefused = 1024

// maxLearnedChats bounds the chats learned from allowed users' messages.
const maxLearnedChats = 1024

// ErrChatNotAllowed refuses delivery to a chat the allow-list does not
// cover: the allow-list guards what Raven says as well as who it hears.
var ErrChatNotAllowed = errors.New("channels: telegram chat is not on the allow-list")

// TelegramOptions configure the Telegram channel.
type TelegramOptions struct {
	Token string
	// AllowFrom are the users Raven listens to. Their private chats (whose
	// id is the user id) are also where it may write.
	AllowFrom []int64
	// AllowChats are further chats (groups) Raven may write to. A chat an
	// allowed user writes from is added for the life of the process.
	AllowChats []int64
	// ServerURL overrides the Bot API base URL (tests use a local fake).
	ServerURL string
	// PollTimeout is the long-poll duration (default 50s).
	PollTimeout time.Duration
	Inbound     Inbound
	Clock       clock.Clock
	Log         *slog.Logger
	// SkipGetMe skips the token check at construction (tests).
	SkipGetMe bool
	// Stream sends a reply's first words as a message and edits it as the
	// reply grows, at most once per StreamInterval (default
	// DefaultTelegramStreamInterval); false sends the reply once, whole.
	Stream         bool
	StreamInterval time.Duration
}

// Telegram receives messages by long polling and delivers replies and
// proactive messages with sendMessage. It is a spine.Outlet.
type Telegram struct {
	o         TelegramOptions
	b         *bot.Bot
	transport *http.Transport
	allow     map[int64]bool
	allowChat map[int64]bool // configured: AllowFrom's private chats and AllowChats

	mu      sync.Mutex
	refused map[int64]bool
	learned map[int64]bool
	live    map[int64]*liveReply // replies being streamed, by chat // chats an allowed user wrote from
}

// NewTelegram builds the bot. Unless SkipGetMe, it checks the token with
// getMe, so a wrong token fails at start-up rather than on first message.
func NewTelegram(o TelegramOptions) (*Telegram, error) {
	if o.Token == "" {
		return nil, errors.New("channels: telegram token is empty (set channels.telegram.token or RAVEN_TELEGRAM_TOKEN)")
	}
	if len(o.AllowFrom) == 0 {
		return nil, errors.New("channels: telegram allow_from is empty")
	}
	if o.Inbound == nil || o.Clock == nil {
		return nil, errors.New("channels: telegram needs Inbound and Clock")
	}
	if o.PollTimeout <= 0 {
		o.PollTimeout = 50 * time.Second
	}
	if o.StreamInterval <= 0 {
		o.StreamInterval = DefaultTelegramStreamInterval
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	t := &Telegram{
		o:         o,
		transport: http.DefaultTransport.(*http.Transport).Clone(),
		allow:     make(map[int64]bool, len(o.AllowFrom)),
		allowChat: make(map[int64]bool, len(o.AllowFrom)+len(o.AllowChats)),
		refused:   make(map[int64]bool),
		learned:   make(map[int64]bool),
		live:      make(map[int64]*liveReply),
	}
	for _, id := range o.AllowFrom {
		t.allow[id] = true
		t.allowChat[id] = true
	}
	for _, id := range o.AllowChats {
		t.allowChat[id] = true
	}
	// The client timeout must outlast the long poll, or every idle poll
	// would end in a client-side timeout error.
	client := &http.Client{Transport: t.transport, Timeout: o.PollTimeout + 10*time.Second}
	opts := []bot.Option{
		bot.WithHTTPClient(o.PollTimeout, client),
		bot.WithDefaultHandler(t.handle),
		// Handlers run on the polling worker: Inbound only submits, and
		// synchronous handlers end with Start instead of outliving it.
		bot.WithNotAsyncHandlers(),
		bot.WithErrorsHandler(func(err error) { o.Log.Warn("telegram", "err", err) }),
		bot.WithAllowedUpdates(bot.AllowedUpdates{"message"}),
	}
	if o.ServerURL != "" {
		opts = append(opts, bot.WithServerURL(o.ServerURL))
	}
	if o.SkipGetMe {
		opts = append(opts, bot.WithSkipGetMe())
	}
	b, err := bot.New(o.Token, opts...)
	if err != nil {
		t.transport.CloseIdleConnections()
		return nil, fmt.Errorf("channels: telegram: %w", err)
	}
	t.b = b
	return t, nil
}

// Run long-polls until ctx ends.
func (t *Telegram) Run(ctx context.Context) error {
	defer t.transport.CloseIdleConnections()
	t.b.Start(ctx)
	return ctx.Err()
}

func (t *Telegram) handle(ctx context.Context, _ *bot.Bot, u *models.Update) {
	m := u.Message
	if m == nil || m.From == nil {
		return
	}
	log := t.o.Log.With("user_id", m.From.ID, "chat_id", m.Chat.ID)
	if !t.allow[m.From.ID] {
		t.refuse(ctx, log, m)
		return
	}
	t.learn(log, m.Chat.ID)
	if strings.TrimSpace(m.Text) == "" {
		log.Debug("telegram: ignoring a message without text")
		return
	}
	req := spine.TurnRequest{
		Origin:  spine.OriginUser,
		Channel: TelegramChannel,
		ChatID:  strconv.FormatInt(m.Chat.ID, 10),
		Content: m.Text,
	}
	if err := t.o.Inbound(ctx, req); err != nil {
		log.Error("telegram inbound dispatch failed", "err", err)
	}
}

// learn lets Raven answer in a chat an allowed user wrote from (a group
// the owner added the bot to).
func (t *Telegram) learn(log *slog.Logger, chatID int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.allowChat[chatID] || t.learned[chatID] {
		return
	}
	if len(t.learned) >= maxLearnedChats {
		log.Warn("telegram: too many chats learned; add this one to allow_chats to write to it")
		return
	}
	t.learned[chatID] = true
}

// mayWrite reports whether Raven may send to chatID.
func (t *Telegram) mayWrite(chatID int64) bool {
	if t.allowChat[chatID] {
		return true
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.learned[chatID]
}

func (t *Telegram) refuse(ctx context.Context, log *slog.Logger, m *models.Message) {
	t.mu.Lock()
	first := !t.refused[m.From.ID] && len(t.refused) < maxRefused
	if first {
		t.refused[m.From.ID] = true
	}
	t.mu.Unlock()
	log.Warn("telegram: message from a user not on the allow-list refused", "first", first)
	if !first {
		return
	}
	// The one send that bypasses Deliver's allow-list: a fixed text, once,
	// in answer to the stranger's own message.
	if _, err := t.b.SendMessage(ctx, &bot.SendMessageParams{ChatID: m.Chat.ID, Text: TelegramRefusal}); err != nil {
		log.Warn("telegram: refusal not sent", "err", err)
	}
}

// Deliver sends m to its chat: split at the API limit, each piece as
// MarkdownV2 (escaped so it reads verbatim), falling back to plain text if
// Telegram still cannot parse it. Proactive messages are not marked.
func (t *Telegram) Deliver(ctx context.Context, m spine.Message) error {
	chatID, err := strconv.ParseInt(m.ChatID, 10, 64)
	if err != nil {
		return fmt.Errorf("channels: telegram chat id %q: %w", m.ChatID, err)
	}
	if !t.mayWrite(chatID) {
		t.o.Log.Warn("telegram: delivery to a chat not on the allow-list refused", "chat_id", chatID, "origin", string(m.Origin), "proactive", m.Proactive)
		return fmt.Errorf("%w: chat %d (add it to channels.telegram.allow_chats)", ErrChatNotAllowed, chatID)
	}
	pieces := SplitMessage(m.Content, TelegramLimit)
	if m.Reply {
		if msgID := t.endLive(chatID); msgID != 0 {
			// The streamed message becomes the reply's first piece.
			if err := t.finalEdit(ctx, chatID, msgID, pieces); err != nil {
				return fmt.Errorf("channels: telegram edit %d in %d: %w", msgID, chatID, err)
			}
			pieces = pieces[1:]
		}
	}
	for i, piece := range pieces {
		if strings.TrimSpace(piece) == "" {
			continue
		}
		if err := t.send(ctx, chatID, piece); err != nil {
			return fmt.Errorf("channels: telegram send to %d (part %d): %w", chatID, i+1, err)
		}
	}
	return nil
}

// maxRateRetries bounds waits on Telegram's 429 per piece.
const maxRateRetries = 3

func (t *Telegram) send(ctx context.Context, chatID int64, text string) error {
	params := &bot.SendMessageParams{ChatID: chatID, Text: EscapeMarkdownV2(text), ParseMode: models.ParseModeMarkdown}
	for retry := 0; ; retry++ {
		_, err := t.b.SendMessage(ctx, params)
		var tooMany *bot.TooManyRequestsError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &tooMany) && retry < maxRateRetries:
			wait := min(time.Duration(max(tooMany.RetryAfter, 1))*time.Second, 30*time.Second)
			if serr := clock.Sleep(ctx, t.o.Clock, wait); serr != nil {
				return serr
			}
		case errors.Is(err, bot.ErrorBadRequest) && params.ParseMode != "" && strings.Contains(err.Error(), "parse"):
			t.o.Log.Warn("telegram: MarkdownV2 refused; resending as plain text", "err", err)
			params = &bot.SendMessageParams{ChatID: chatID, Text: text}
		default:
			return err
		}
	}
}
