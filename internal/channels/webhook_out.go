package channels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

// DeliveryHeader carries one id per message, identical across retries, so
// the receiver can drop a duplicate when a retry follows a lost response.
const DeliveryHeader = "X-Raven-Delivery"

// WebhookOutletOptions configure outbound webhook delivery.
type WebhookOutletOptions struct {
	URL    string
	Secret []byte
	// Client defaults to an http.Client with a 15s timeout.
	Client *http.Client
	// MaxAttempts bounds attempts per message (default 5).
	MaxAttempts int
	// BaseBackoff doubles per retry up to MaxBackoff (defaults 500ms, 30s).
	BaseBackoff, MaxBackoff time.Duration
	Clock                   clock.Clock
	Log                     *slog.Logger
}

// WebhookOutlet posts messages to the configured URL, signed like inbound
// hooks.
type WebhookOutlet struct {
	o WebhookOutletOptions
}

// OutboundMessage is the JSON body of an outbound delivery.
type OutboundMessage struct {
	ChatID    string `json:"chat_id"`
	Text      string `json:"text"`
	Origin    string `json:"origin,omitempty"`
	Proactive bool   `json:"proactive"`
	Reply     bool   `json:"reply"`
}

// NewWebhookOutlet returns the outbound outlet.
func NewWebhookOutlet(o WebhookOutletOptions) (*WebhookOutlet, error) {
	if o.URL == "" || len(o.Secret) == 0 || o.Clock == nil {
		return nil, errors.New("channels: webhook outlet needs URL, Secret and Clock")
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 15 * time.Second}
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultWebhookMaxAttempts
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 500 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &WebhookOutlet{o: o}, nil
}

// permanentError is a refusal a retry cannot fix (a 4xx other than 408/429).
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Deliver posts m verbatim, retrying network errors, 408, 429 and 5xx with
// exponential backoff until MaxAttempts or ctx ends.
func (w *WebhookOutlet) Deliver(ctx context.Context, m spine.Message) error {
	body, err := json.Marshal(OutboundMessage{ChatID: m.ChatID, Text: m.Content, Origin: string(m.Origin), Proactive: m.Proactive, Reply: m.Reply})
	if err != nil {
		return fmt.Errorf("channels: webhook encode: %w", err)
	}
	id := uuid.NewString()
	backoff := w.o.BaseBackoff
	for attempt := 1; ; attempt++ {
		err = w.post(ctx, id, body)
		if err == nil {
			return nil
		}
		var perm permanentError
		if errors.As(err, &perm) || attempt >= w.o.MaxAttempts || ctx.Err() != nil {
			return fmt.Errorf("channels: webhook deliver %s (attempt %d/%d): %w", id, attempt, w.o.MaxAttempts, err)
		}
		w.o.Log.Warn("webhook delivery failed; retrying", "delivery", id, "attempt", attempt, "backoff", backoff, "err", err)
		if serr := clock.Sleep(ctx, w.o.Clock, backoff); serr != nil {
			return fmt.Errorf("channels: webhook deliver %s: %w (last error: %v)", id, serr, err)
		}
		backoff = min(backoff*2, w.o.MaxBackoff)
	}
}

func (w *WebhookOutlet) post(ctx context.Context, id string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.o.URL, bytes.NewReader(body))
	if err != nil {
		return permanentError{err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(DeliveryHeader, id)
	// Re-signed on each attempt so a retry after a long backoff still
	// lands inside the receiver's window.
	req.Header.Set(SignatureHeader, Sign(w.o.Secret, w.o.Clock.Now(), body))
	resp, err := w.o.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		return fmt.Errorf("status %d", c)
	default:
		return permanentError{fmt.Errorf("status %d", c)}
	}
}
