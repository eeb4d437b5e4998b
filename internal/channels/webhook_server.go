package channels

import (
	"log/slog"
	"net/http"
	"time"
)

// Defaults of the HTTP server the webhook listens with.
const (
	DefaultWebhookReadHeaderTimeout = 5 * time.Second
	DefaultWebhookWriteTimeout      = 30 * time.Second
	DefaultWebhookIdleTimeout       = 60 * time.Second
	DefaultWebhookMaxHeaderBytes    = 16 << 10
)

// WebhookServerOptions configure NewWebhookServer. Zero values take the
// Default* constants.
type WebhookServerOptions struct {
	// ReadHeaderTimeout bounds the request line and headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds the whole request, body included (default
	// ReadHeaderTimeout + DefaultWebhookBodyTimeout).
	ReadTimeout    time.Duration
	WriteTimeout   time.Duration
	IdleTimeout    time.Duration
	MaxHeaderBytes int
	// Log receives the server's own errors (TLS, malformed requests) at
	// warn level; default discards.
	Log *slog.Logger
}

// NewWebhookServer returns the http.Server to serve the webhook handler on:
// every phase of a request has a deadline, so connections that trickle
// headers or a body, or idle, are closed instead of held forever.
func NewWebhookServer(h http.Handler, o WebhookServerOptions) *http.Server {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultWebhookReadHeaderTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = o.ReadHeaderTimeout + DefaultWebhookBodyTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWebhookWriteTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultWebhookIdleTimeout
	}
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = DefaultWebhookMaxHeaderBytes
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(o.Log.Handler(), slog.LevelWarn),
	}
}
