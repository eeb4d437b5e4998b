package gateway

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/config"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/anthropic"
	"github.com/raven-agent/raven/internal/llm/openai"
)

// OllamaBaseURL is Ollama's OpenAI-compatible endpoint.
const OllamaBaseURL = "http://localhost:11434/v1"

// NewProvider builds the configured model with retries. No model configured
// yields llm.ErrNoModel. Environment secrets win over the file.
func NewProvider(cfg config.Config, clk clock.Clock, log *slog.Logger) (llm.Provider, error) {
	spec := cfg.Model
	if spec == "" {
		return nil, llm.ErrNoModel
	}
	if path, ok := strings.CutPrefix(spec, "scripted:"); ok {
		return llm.LoadScripted(path)
	}
	name, model, _ := strings.Cut(spec, "/")
	pc := cfg.Providers
	var p llm.Provider
	var err error
	switch name {
	case "openai":
		ep := pc.OpenAI
		p, err = openai.New(openai.Config{Label: "openai", Model: model,
			APIKey:  firstNonEmpty(os.Getenv("OPENAI_API_KEY"), ep.APIKey),
			BaseURL: firstNonEmpty(os.Getenv("OPENAI_BASE_URL"), ep.BaseURL), Timeout: pc.Timeout.D()})
	case "ollama":
		ep := pc.Ollama
		p, err = openai.New(openai.Config{Label: "ollama", Model: model,
			APIKey:  firstNonEmpty(ep.APIKey, "ollama"),
			BaseURL: firstNonEmpty(os.Getenv("OLLAMA_BASE_URL"), ep.BaseURL, OllamaBaseURL), Timeout: pc.Timeout.D()})
	case "anthropic":
		ep := pc.Anthropic
		p, err = anthropic.New(anthropic.Config{Model: model,
			APIKey:  firstNonEmpty(os.Getenv("ANTHROPIC_API_KEY"), ep.APIKey),
			BaseURL: firstNonEmpty(os.Getenv("ANTHROPIC_BASE_URL"), ep.BaseURL), Timeout: pc.Timeout.D()})
	default:
		return nil, fmt.Errorf("gateway: unknown model provider %q (want openai, ollama, anthropic or scripted:PATH)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("gateway: model %s: %w", spec, err)
	}
	return llm.WithRetry(p, llm.RetryConfig{MaxAttempts: pc.MaxAttempts, Clock: clk, Logger: log}), nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// ProbeEndpoint returns a cheap GET that proves the configured model's
// endpoint is reachable and the key accepted (the models listing), for
// `raven doctor`. Scripted and unset models return "".
func ProbeEndpoint(cfg config.Config) (string, http.Header) {
	name, _, _ := strings.Cut(cfg.Model, "/")
	h := http.Header{}
	switch name {
	case "openai":
		base := firstNonEmpty(os.Getenv("OPENAI_BASE_URL"), cfg.Providers.OpenAI.BaseURL, openai.DefaultBaseURL)
		if key := firstNonEmpty(os.Getenv("OPENAI_API_KEY"), cfg.Providers.OpenAI.APIKey); key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
		return strings.TrimRight(base, "/") + "/models", h
	case "ollama":
		base := firstNonEmpty(os.Getenv("OLLAMA_BASE_URL"), cfg.Providers.Ollama.BaseURL, OllamaBaseURL)
		return strings.TrimRight(base, "/") + "/models", h
	case "anthropic":
		base := firstNonEmpty(os.Getenv("ANTHROPIC_BASE_URL"), cfg.Providers.Anthropic.BaseURL, anthropic.DefaultBaseURL)
		h.Set("x-api-key", firstNonEmpty(os.Getenv("ANTHROPIC_API_KEY"), cfg.Providers.Anthropic.APIKey))
		h.Set("anthropic-version", "2023-06-01")
		return strings.TrimRight(base, "/") + "/v1/models", h
	}
	return "", nil
}
