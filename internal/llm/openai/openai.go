// Package openai is the llm.Provider for OpenAI-compatible Chat Completions
// endpoints: OpenAI itself, Ollama, vLLM, llama.cpp server and OpenRouter.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/raven-agent/raven/internal/llm"
)

// DefaultBaseURL is OpenAI's own endpoint.
const DefaultBaseURL = "https://api.openai.com/v1"

// Config configures a Provider.
type Config struct {
	// Label names the provider in Name() and errors ("openai", "ollama").
	Label string
	Model string
	// BaseURL is the API root including /v1; empty means DefaultBaseURL.
	BaseURL string
	// APIKey may be a dummy for local servers that ignore it.
	APIKey     string
	HTTPClient *http.Client
	// Timeout bounds one attempt; 0 means only ctx bounds it.
	Timeout time.Duration
}

// Provider calls a Chat Completions endpoint. It makes exactly one HTTP
// attempt per Chat: retries belong to llm.WithRetry.
type Provider struct {
	label    string
	model    string
	endpoint string
	timeout  time.Duration
	// Legacy servers (Ollama, llama.cpp, vLLM) understand max_tokens; OpenAI's
	// reasoning models reject it in favour of max_completion_tokens.
	completionTokens bool
	client           oai.Client
}

// New returns a Provider for cfg.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: no model name")
	}
	if cfg.Label == "" {
		cfg.Label = "openai"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: base URL %q is not an http(s) URL", cfg.Label, cfg.BaseURL)
	}
	if cfg.APIKey == "" {
		// Local servers ignore the key but the SDK insists on one.
		cfg.APIKey = "unused"
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	return &Provider{
		label:            cfg.Label,
		model:            cfg.Model,
		endpoint:         llm.Endpoint(cfg.BaseURL, "chat/completions"),
		timeout:          cfg.Timeout,
		completionTokens: u.Host == "api.openai.com",
		client: oai.NewClient(
			option.WithBaseURL(cfg.BaseURL),
			option.WithAPIKey(cfg.APIKey),
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0),
		),
	}, nil
}

// Name implements llm.Provider.
func (p *Provider) Name() string { return p.label + "/" + p.model }

// Chat implements llm.Provider.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	params, err := p.params(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.label, err)
	}
	callCtx := ctx
	if p.timeout > 0 {
		var cancel context.CancelFunc
		callCtx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	if req.OnDelta != nil {
		return p.stream(ctx, callCtx, params, req.OnDelta)
	}
	var httpRes *http.Response
	out, err := p.client.Chat.Completions.New(callCtx, params, option.WithResponseInto(&httpRes))
	if err != nil {
		var sdkErr *oai.Error
		detail := ""
		if errors.As(err, &sdkErr) {
			detail = sdkErr.Message
		}
		return nil, llm.CallError(ctx, p.label, p.endpoint, httpRes, err, detail)
	}
	resp, err := fromCompletion(out)
	if err != nil {
		return nil, llm.CallError(ctx, p.label, p.endpoint, httpRes, err, "")
	}
	return resp, nil
}
