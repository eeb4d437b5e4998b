// Package anthropic is the llm.Provider for Anthropic's Messages API, through
// the official Go SDK.
package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	anth "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/raven-agent/raven/internal/llm"
)

// DefaultBaseURL is Anthropic's endpoint (without /v1).
const DefaultBaseURL = "https://api.anthropic.com"

// DefaultMaxTokens is sent when a request sets none: the API requires one.
const DefaultMaxTokens = 4096

// Config configures a Provider.
type Config struct {
	Model      string
	APIKey     string
	BaseURL    string // empty means DefaultBaseURL
	HTTPClient *http.Client
	// Timeout bounds one attempt; 0 means only ctx bounds it.
	Timeout time.Duration
}

// Provider calls the Messages API. It makes exactly one HTTP attempt per
// Chat: retries belong to llm.WithRetry.
type Provider struct {
	model    string
	endpoint string
	timeout  time.Duration
	client   anth.Client
}

// New returns a Provider for cfg.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, errors.New("anthropic: no model name")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("anthropic: no API key")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Provider{
		model:    cfg.Model,
		endpoint: llm.Endpoint(cfg.BaseURL, "v1/messages"),
		timeout:  cfg.Timeout,
		client: anth.NewClient(
			// Configuration comes from Raven's config only, never ambient
			// ANTHROPIC_* variables or profile files.
			option.WithoutEnvironmentDefaults(),
			option.WithBaseURL(cfg.BaseURL),
			option.WithAPIKey(cfg.APIKey),
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0),
		),
	}, nil
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return "anthropic/" + p.model }

// Chat implements llm.Provider.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w", err)
	}
	callCtx := ctx
	if p.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	var httpRes *http.Response
	opts := []option.RequestOption{option.WithResponseInto(&httpRes)}
	if req.Temperature != nil {
		// This SDK version has no typed field for it; the API still accepts it.
		opts = append(opts, option.WithJSONSet("temperature", *req.Temperature))
	}
	if req.OnDelta != nil {
		return p.stream(ctx, callCtx, params, opts, req.OnDelta)
	}
	msg, err := p.client.Messages.New(callCtx, params, opts...)
	if err != nil {
		var sdkErr *anth.Error
		detail := ""
		if errors.As(err, &sdkErr) {
			detail = sdkErr.Message
		}
		return nil, llm.CallError(ctx, "anthropic", p.endpoint, httpRes, err, detail)
	}
	resp, err := fromMessage(msg)
	if err != nil {
		return nil, llm.CallError(ctx, "anthropic", p.endpoint, httpRes, err, "")
	}
	return resp, nil
}
