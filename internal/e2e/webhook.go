package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/channels"
)

// WebhookSecret is the channels.webhook.secret of WebhookConfig.
const WebhookSecret = "e2e-webhook-secret"

// WebhookReceiver is the owner's end of Raven's outbound webhook: an HTTP
// server that verifies each delivery's signature and records it.
type WebhookReceiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	got     []channels.OutboundMessage
	bad     []string
	changed chan struct{}
}

// StartWebhookReceiver starts a receiver; the cleanup closes it.
func (e *Env) StartWebhookReceiver() *WebhookReceiver {
	w := &WebhookReceiver{changed: make(chan struct{})}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	e.T.Cleanup(w.srv.Close)
	return w
}

func (w *WebhookReceiver) serve(rw http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m channels.OutboundMessage
	_, _, verr := channels.Verify([]byte(WebhookSecret), r.Header.Get(channels.SignatureHeader), body, time.Now(), 5*time.Minute)
	jerr := json.Unmarshal(body, &m)
	w.mu.Lock()
	defer w.mu.Unlock()
	if verr != nil || jerr != nil {
		w.bad = append(w.bad, string(body))
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	w.got = append(w.got, m)
	close(w.changed)
	w.changed = make(chan struct{})
}

// URL is the outbound_url to configure.
func (w *WebhookReceiver) URL() string { return w.srv.URL + "/hook" }

// Messages are the verified deliveries so far.
func (w *WebhookReceiver) Messages() []channels.OutboundMessage {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]channels.OutboundMessage(nil), w.got...)
}

// Rejected are deliveries whose signature or body did not verify.
func (w *WebhookReceiver) Rejected() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

// WebhookConfig is the config of an enabled webhook channel posting to w
// (inbound on a free loopback port, so parallel gateways never collide),
// with channels.forward naming it.
func (w *WebhookReceiver) WebhookConfig(chatID string) map[string]any {
	return map[string]any{
		"channels.webhook.enabled":      true,
		"channels.webhook.listen":       "127.0.0.1:0",
		"channels.webhook.secret":       WebhookSecret,
		"channels.webhook.outbound_url": w.URL(),
		"channels.forward":              []string{"webhook:" + chatID},
	}
}
