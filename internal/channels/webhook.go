package channels

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/strictjson"
)

// WebhookChannel is the channel name of the signed HTTP webhook.
const WebhookChannel = "webhook"

// Webhook inbound limits.
const (
	maxChatIDLen        = 128
	defaultSeenCapacity = 10000
)

// DefaultWebhookBodyTimeout bounds reading one request body: a signed
// webhook body is at most MaxBody, sent at once by a machine.
const DefaultWebhookBodyTimeout = 10 * time.Second

// WebhookHandlerOptions configure the inbound webhook.
type WebhookHandlerOptions struct {
	// Name is the hook name: the handler serves POST /hooks/<Name>.
	Name   string
	Secret []byte
	// Window bounds timestamp skew (default 5m); a signature is also
	// remembered for this long to refuse replays.
	Window time.Duration
	// MaxBody caps the request body (default 64 KiB).
	MaxBody int64
	// SeenCapacity bounds the replay cache (default 10000).
	SeenCapacity int
	// BodyTimeout bounds reading the request body (default
	// DefaultWebhookBodyTimeout; wall clock: it is a socket deadline).
	BodyTimeout time.Duration
	// SeenStatePath, if set, is the file the replay cache is kept in, so a
	// request captured before a restart is still refused after it.
	SeenStatePath string
	Inbound       Inbound
	Clock         clock.Clock
	Log           *slog.Logger
}

// WebhookHandler serves POST /hooks/<name>.
type WebhookHandler struct {
	o    WebhookHandlerOptions
	path string

	mu   sync.Mutex
	seen map[string]time.Time // MAC hex → expiry
	file *seenFile            // nil: the cache lives in memory only
	// notBefore refuses requests signed before it: set when the replay
	// state was found corrupt at start (see ErrReplayStateLost).
	notBefore time.Time
	recovery  string // where a corrupt state file was moved
}

// inboundBody is the strict JSON body of an inbound hook.
type inboundBody struct {
	ChatID string `json:"chat_id"`
	Text   string `json:"text"`
}

// NewWebhookHandler returns the inbound handler. It refuses an empty secret:
// an unsigned hook would let anyone on the network drive the agent.
func NewWebhookHandler(o WebhookHandlerOptions) (*WebhookHandler, error) {
	if len(o.Secret) == 0 {
		return nil, errors.New("channels: webhook secret is empty (set channels.webhook.secret or RAVEN_WEBHOOK_SECRET)")
	}
	if o.Name == "" || o.Inbound == nil || o.Clock == nil {
		return nil, errors.New("channels: webhook handler needs Name, Inbound and Clock")
	}
	if o.Window <= 0 {
		o.Window = DefaultWebhookWindow
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultWebhookMaxBody
	}
	if o.SeenCapacity <= 0 {
		o.SeenCapacity = defaultSeenCapacity
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultWebhookBodyTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	h := &WebhookHandler{o: o, path: "/hooks/" + o.Name, seen: make(map[string]time.Time)}
	if o.SeenStatePath != "" {
		now := o.Clock.Now()
		sf, moved, err := loadSeen(o.SeenStatePath, o.SeenCapacity, now, o.Log.With("hook", o.Name), h.seen)
		if err != nil {
			return nil, err
		}
		h.file, h.recovery = sf, moved
		if moved != "" {
			// Timestamps are whole seconds: the first whole second after
			// now is the first one no captured request can carry.
			h.notBefore = now.Truncate(time.Second).Add(time.Second)
		}
	}
	return h, nil
}

// StateRecovery reports where a corrupt replay-state file was moved at
// start ("" when it was sound or absent), for doctor and the start-up log.
func (h *WebhookHandler) StateRecovery() string { return h.recovery }

// Close releases the replay-state file. The handler refuses requests after.
func (h *WebhookHandler) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.file.close()
}

// Path is the URL path the handler serves.
func (h *WebhookHandler) Path() string { return h.path }

func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != h.path {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		httpError(w, http.StatusMethodNotAllowed, "method not allowed")
		return
	}
	// The handler sets its own body deadline so a trickling client is cut
	// off whatever server it is mounted on; ErrNotSupported (a recorder in
	// tests) leaves only the server's. net/http lifts it when the body hits
	// EOF, so it does not outlive the body into the dispatch.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.o.BodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", h.o.MaxBody))
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			h.o.Log.Warn("webhook refused: body not received in time", "hook", h.o.Name, "remote", r.RemoteAddr, "timeout", h.o.BodyTimeout)
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusRequestTimeout, fmt.Sprintf("body not received within %s", h.o.BodyTimeout))
			return
		}
		httpError(w, http.StatusBadRequest, "cannot read body")
		return
	}
	log := h.o.Log.With("hook", h.o.Name, "remote", r.RemoteAddr)
	now := h.o.Clock.Now()
	ts, sig, err := Verify(h.o.Secret, r.Header.Get(SignatureHeader), body, now, h.o.Window)
	if err != nil {
		log.Warn("webhook refused", "err", err)
		httpError(w, http.StatusUnauthorized, err.Error())
		return
	}
	if ts.Before(h.notBefore) {
		log.Warn("webhook refused: signed before a replay-state loss", "signed", ts)
		httpError(w, http.StatusConflict, ErrReplayStateLost.Error())
		return
	}
	switch err := h.remember(sig, ts.Add(h.o.Window), now); {
	case errors.Is(err, ErrReplayed):
		log.Warn("webhook replay refused")
		httpError(w, http.StatusConflict, err.Error())
		return
	case errors.Is(err, errSeenPersist):
		log.Error("webhook refused", "err", err)
		httpError(w, http.StatusServiceUnavailable, errSeenPersist.Error())
		return
	case err != nil:
		log.Warn("webhook refused", "err", err)
		httpError(w, http.StatusTooManyRequests, err.Error())
		return
	}
	var in inboundBody
	if err := decodeStrictJSON(body, &in); err != nil {
		httpError(w, http.StatusBadRequest, err.Error())
		return
	}
	switch {
	case in.ChatID == "" || len(in.ChatID) > maxChatIDLen:
		httpError(w, http.StatusBadRequest, fmt.Sprintf("chat_id must be 1..%d bytes", maxChatIDLen))
		return
	case in.Text == "":
		httpError(w, http.StatusBadRequest, "text must not be empty")
		return
	}
	req := spine.TurnRequest{Origin: spine.OriginUser, Channel: WebhookChannel, ChatID: in.ChatID, Content: in.Text}
	if err := h.o.Inbound(r.Context(), req); err != nil {
		log.Error("webhook inbound dispatch failed", "chat_id", in.ChatID, "err", err)
		httpError(w, http.StatusServiceUnavailable, "not accepted")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"accepted"}`+"\n")
}

// errSeenFull refuses new requests while the replay cache is full of live
// entries: evicting one would reopen it to replay.
var errSeenFull = errors.New("webhook: too many requests in the replay window")

// remember records sig until expiry, refusing one already seen.
func (h *WebhookHandler) remember(sig string, expiry, now time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if exp, ok := h.seen[sig]; ok && now.Before(exp) {
		return ErrReplayed
	}
	if len(h.seen) >= h.o.SeenCapacity {
		for k, exp := range h.seen {
			if !now.Before(exp) {
				delete(h.seen, k)
			}
		}
		if len(h.seen) >= h.o.SeenCapacity {
			return errSeenFull
		}
	}
	if h.file != nil {
		// On disk before the request is accepted, so a crash right after
		// cannot reopen it to replay.
		if err := h.file.record(h.seen, sig, expiry, now); err != nil {
			return err
		}
	}
	h.seen[sig] = expiry
	return nil
}

func decodeStrictJSON(body []byte, v any) error {
	if err := strictjson.Decode(body, v); err != nil {
		return fmt.Errorf("bad JSON body: %w", err)
	}
	return nil
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
