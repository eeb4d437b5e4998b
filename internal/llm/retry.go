package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

// Retry defaults, used when the matching RetryConfig field is zero.
const (
	DefaultMaxAttempts   = 3
	DefaultBaseDelay     = time.Second
	DefaultMaxDelay      = 30 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
)

// RetryConfig bounds how WithRetry retries transient failures.
type RetryConfig struct {
	// MaxAttempts counts every call including the first; 1 disables retries.
	MaxAttempts int
	// BaseDelay is the backoff before the second attempt; it doubles per attempt.
	BaseDelay time.Duration
	// MaxDelay caps the exponential backoff.
	MaxDelay time.Duration
	// MaxRetryAfter caps a server-requested wait so one header cannot stall
	// the agent for an hour.
	MaxRetryAfter time.Duration
	Clock         clock.Clock
	Logger        *slog.Logger
	// Jitter returns a value in [0,1); nil uses math/rand. Tests pin it.
	Jitter func() float64
}

// WithRetry wraps p so that transient failures (*APIError with Retryable)
// are retried with exponential backoff and jitter, honouring Retry-After.
// Waits run on cfg.Clock and end at once when ctx ends. The SDKs' own retries
// must be disabled so that every provider retries the same way, here.
func WithRetry(p Provider, cfg RetryConfig) Provider {
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.BaseDelay <= 0 {
		cfg.BaseDelay = DefaultBaseDelay
	}
	if cfg.MaxDelay <= 0 {
		cfg.MaxDelay = DefaultMaxDelay
	}
	if cfg.MaxRetryAfter <= 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Jitter == nil {
		cfg.Jitter = rand.Float64
	}
	return &retrying{inner: p, cfg: cfg}
}

type retrying struct {
	inner Provider
	cfg   RetryConfig
}

func (r *retrying) Name() string { return r.inner.Name() }

func (r *retrying) Chat(ctx context.Context, req Request) (*Response, error) {
	// A retry after the first delta would show the caller a second,
	// different beginning of the reply: only a call that streamed nothing
	// yet is retried.
	started := false
	if onDelta := req.OnDelta; onDelta != nil {
		req.OnDelta = func(d Delta) {
			started = true
			onDelta(d)
		}
	}
	for attempt := 1; ; attempt++ {
		resp, err := r.inner.Chat(ctx, req)
		if err == nil {
			return resp, nil
		}
		if started {
			return nil, fmt.Errorf("%w: %w", ErrStreamStarted, err)
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.Retryable() || ctx.Err() != nil {
			return nil, err
		}
		if attempt >= r.cfg.MaxAttempts {
			if attempt > 1 {
				return nil, fmt.Errorf("%w (gave up after %d attempts)", err, attempt)
			}
			return nil, err
		}
		wait := r.delay(attempt, apiErr)
		r.cfg.Logger.Warn("llm: retrying model call",
			"provider", r.inner.Name(), "attempt", attempt, "max_attempts", r.cfg.MaxAttempts,
			"status", apiErr.StatusCode, "wait", wait, "err", apiErr.Message)
		if sleepErr := clock.Sleep(ctx, r.cfg.Clock, wait); sleepErr != nil {
			// Report the failure that led here too: "canceled" alone would
			// hide that the endpoint was misbehaving.
			return nil, fmt.Errorf("%w while waiting to retry after: %w", sleepErr, err)
		}
	}
}

// delay picks the wait before attempt+1: the server's Retry-After when it
// gave one (capped), else BaseDelay*2^(attempt-1) capped at MaxDelay, with
// "equal jitter" (half fixed, half random) so that concurrent callers spread
// out yet never retry immediately.
func (r *retrying) delay(attempt int, e *APIError) time.Duration {
	if d, ok := ParseRetryAfter(e.RetryAfter, r.cfg.Clock.Now()); ok {
		return min(d, r.cfg.MaxRetryAfter)
	}
	d := r.cfg.BaseDelay
	for i := 1; i < attempt && d < r.cfg.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, r.cfg.MaxDelay)
	half := d / 2
	return half + time.Duration(r.cfg.Jitter()*float64(d-half))
}

// ParseRetryAfter reads a Retry-After header value: delay-seconds or an HTTP
// date (relative to now). A date in the past means "now" (0, true).
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(24*time.Hour/time.Second) {
			secs = int64(24 * time.Hour / time.Second) // avoid Duration overflow; the caller caps anyway
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
