package channels

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

// DefaultTelegramStreamInterval bounds how often a streamed reply's message
// is edited: Telegram rate-limits edits, and a message that changes every
// few words is harder to read than one that grows in steps.
const DefaultTelegramStreamInterval = 1500 * time.Millisecond

// liveReply is a reply being streamed into one chat: a worker sends its
// first words, then edits the message, at most once per interval, until
// the reply's Deliver ends it.
type liveReply struct {
	chatID int64
	wake   chan struct{} // has text to show (capacity 1)
	finish chan struct{} // closed by the reply's Deliver
	done   chan struct{} // closed when the worker returned

	// Guarded by Telegram.mu.
	text  strings.Builder
	msgID int
}

// Stream implements spine.Streamer: the first delta of a reply starts the
// chat's worker; the network calls happen there, never on the turn.
func (t *Telegram) Stream(ctx context.Context, d spine.Delta) {
	if !t.o.Stream {
		return
	}
	chatID, err := strconv.ParseInt(d.ChatID, 10, 64)
	if err != nil || !t.mayWrite(chatID) {
		return // the reply's Deliver reports it
	}
	t.mu.Lock()
	lr := t.live[chatID]
	if lr == nil {
		lr = &liveReply{chatID: chatID, wake: make(chan struct{}, 1), finish: make(chan struct{}), done: make(chan struct{})}
		t.live[chatID] = lr
		go t.streamWorker(ctx, lr)
	}
	if d.Tool != nil {
		lr.text.WriteString("\n" + ToolLine(d.Tool) + "\n")
	} else {
		lr.text.WriteString(d.Text)
	}
	t.mu.Unlock()
	select {
	case lr.wake <- struct{}{}:
	default:
	}
}

// streamWorker shows lr's text: a sendMessage at once, then an edit per
// interval while the text grows, until the reply's Deliver finishes it or
// the turn (turnCtx) ends without a reply.
func (t *Telegram) streamWorker(turnCtx context.Context, lr *liveReply) {
	defer close(lr.done)
	// The calls themselves outlive a turn cancelled mid-edit: the bot
	// client's own timeout bounds them.
	ctx := context.WithoutCancel(turnCtx)
	shown, last := "", time.Time{}
	for {
		select {
		case <-lr.wake:
		case <-lr.finish:
			return
		case <-turnCtx.Done():
			t.mu.Lock()
			if t.live[lr.chatID] == lr {
				delete(t.live, lr.chatID)
			}
			t.mu.Unlock()
			return
		}
		if !last.IsZero() {
			if wait := last.Add(t.o.StreamInterval).Sub(t.o.Clock.Now()); wait > 0 {
				timer := t.o.Clock.NewTimer(wait)
				select {
				case <-timer.C():
				case <-lr.finish:
					timer.Stop()
					return
				case <-turnCtx.Done():
					timer.Stop()
					continue
				}
			}
		}
		t.mu.Lock()
		text, msgID := partialText(lr.text.String()), lr.msgID
		t.mu.Unlock()
		if strings.TrimSpace(text) == "" || text == shown {
			continue
		}
		last = t.o.Clock.Now()
		// Partial text goes plain: half a reply's markdown may not parse,
		// and the final edit formats the whole reply.
		if msgID == 0 {
			sent, err := t.b.SendMessage(ctx, &bot.SendMessageParams{ChatID: lr.chatID, Text: text})
			if err != nil {
				t.o.Log.Warn("telegram: streamed reply not started; it will be sent whole", "chat_id", lr.chatID, "err", err)
				continue
			}
			t.mu.Lock()
			lr.msgID = sent.ID
			t.mu.Unlock()
		} else if _, err := t.b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: lr.chatID, MessageID: msgID, Text: text}); err != nil && !notModified(err) {
			t.o.Log.Debug("telegram: streamed edit failed", "chat_id", lr.chatID, "err", err)
		}
		shown = text
	}
}

// partialText is what a message being streamed shows: the text so far,
// cut to one message (the final reply is split properly).
func partialText(s string) string {
	if r := []rune(s); len(r) > TelegramLimit {
		return string(r[:TelegramLimit-1]) + "…"
	}
	return s
}

// endLive stops chatID's streamed reply, if one runs, and returns the id of
// the message it sent (0 if none).
func (t *Telegram) endLive(chatID int64) int {
	t.mu.Lock()
	lr := t.live[chatID]
	delete(t.live, chatID)
	t.mu.Unlock()
	if lr == nil {
		return 0
	}
	close(lr.finish)
	<-lr.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return lr.msgID
}

// finalEdit turns the streamed message into the reply's first piece, as
// MarkdownV2 with the same plain-text fallback as send.
func (t *Telegram) finalEdit(ctx context.Context, chatID int64, msgID int, pieces []string) error {
	text := ""
	if len(pieces) > 0 {
		text = pieces[0]
	}
	if strings.TrimSpace(text) == "" {
		text = "…" // a reply of nothing leaves no half-sentence behind
	}
	params := &bot.EditMessageTextParams{ChatID: chatID, MessageID: msgID, Text: EscapeMarkdownV2(text), ParseMode: models.ParseModeMarkdown}
	for retry := 0; ; retry++ {
		_, err := t.b.EditMessageText(ctx, params)
		var tooMany *bot.TooManyRequestsError
		switch {
		case err == nil || notModified(err):
			return nil
		case errors.As(err, &tooMany) && retry < maxRateRetries:
			wait := min(time.Duration(max(tooMany.RetryAfter, 1))*time.Second, 30*time.Second)
			if clock.Sleep(ctx, t.o.Clock, wait) != nil {
				return err
			}
		case errors.Is(err, bot.ErrorBadRequest) && params.ParseMode != "" && strings.Contains(err.Error(), "parse"):
			params = &bot.EditMessageTextParams{ChatID: chatID, MessageID: msgID, Text: text}
		default:
			return err
		}
	}
}

// notModified is Telegram's answer to an edit that changes nothing.
func notModified(err error) bool { return strings.Contains(err.Error(), "message is not modified") }
