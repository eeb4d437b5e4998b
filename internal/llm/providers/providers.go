// Package providers builds an llm.Provider from a "provider/model" spec. It
// lives apart from llm so that llm's users do not link the vendor SDKs.
package providers

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/llm/anthropic"
	"github.com/raven-agent/raven/internal/llm/openai"
)

// OllamaBaseURL is where Ollama serves its OpenAI-compatible API by default.
const OllamaBaseURL = "http://localhost:11434/v1"

// DefaultTimeout bounds one HTTP attempt: the providers.timeout default and
// what Options.Timeout zero means. The one copy of that default. Five
// minutes rather than a cloud API's usual two: local models on a laptop
// (ollama, llama.cpp) can take minutes for a long answer, and a cut-off
// attempt is retried from the start, so a short bound only wastes the work.
const DefaultTimeout = 5 * time.Minute

// ValidSpecs lists the forms a model spec may take, for help and error text.
const ValidSpecs = "openai/<model>, ollama/<model>, anthropic/<model>, scripted:<path>"

// Options are the dependencies and settings shared by every provider.
type Options struct {
	// APIKey for the provider; optional for ollama and OpenAI-compatible
	// local servers (a BaseURL is set).
	APIKey string
	// BaseURL overrides the provider's endpoint, e.g. a vLLM, llama.cpp or
	// OpenRouter URL for "openai/<model>" (include the /v1 suffix).
	BaseURL    string
	HTTPClient *http.Client
	Clock      clock.Clock
	Logger     *slog.Logger
	// MaxAttempts counts every try of one call; 0 means llm.DefaultMaxAttempts.
	MaxAttempts int
	// Timeout bounds one HTTP attempt; 0 means DefaultTimeout.
	Timeout time.Duration
}

// SpecError reports an unusable model spec.
type SpecError struct {
	Spec   string
	Reason string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("llm: model %q: %s (valid forms: %s)", e.Spec, e.Reason, ValidSpecs)
}

// New returns the provider named by spec: "openai/gpt-4o-mini",
// "ollama/qwen2.5:7b", "anthropic/claude-sonnet-4-20250514" or
// "scripted:PATH". SDK-backed providers come wrapped in llm.WithRetry. An
// empty spec yields llm.ErrNoModel.
func New(spec string, opts Options) (llm.Provider, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, llm.ErrNoModel
	}
	if path, ok := strings.CutPrefix(spec, "scripted:"); ok {
		if path == "" {
			return nil, &SpecError{Spec: spec, Reason: "no script path"}
		}
		return llm.LoadScripted(path)
	}
	kind, model, ok := strings.Cut(spec, "/")
	if !ok || kind == "" {
		return nil, &SpecError{Spec: spec, Reason: "not of the form provider/model"}
	}
	if model == "" {
		return nil, &SpecError{Spec: spec, Reason: "no model name after " + kind + "/"}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}

	var (
		p   llm.Provider
		err error
	)
	switch kind {
	case "openai":
		if opts.APIKey == "" && opts.BaseURL == "" {
			return nil, &SpecError{Spec: spec, Reason: "OpenAI needs an API key (or set a base URL for an OpenAI-compatible local server)"}
		}
		p, err = openai.New(openai.Config{Label: kind, Model: model, BaseURL: opts.BaseURL, APIKey: opts.APIKey, HTTPClient: opts.HTTPClient, Timeout: timeout})
	case "ollama":
		base := opts.BaseURL
		if base == "" {
			base = OllamaBaseURL
		}
		p, err = openai.New(openai.Config{Label: kind, Model: model, BaseURL: base, APIKey: opts.APIKey, HTTPClient: opts.HTTPClient, Timeout: timeout})
	case "anthropic":
		if opts.APIKey == "" {
			return nil, &SpecError{Spec: spec, Reason: "Anthropic needs an API key"}
		}
		p, err = anthropic.New(anthropic.Config{Model: model, BaseURL: opts.BaseURL, APIKey: opts.APIKey, HTTPClient: opts.HTTPClient, Timeout: timeout})
	default:
		return nil, &SpecError{Spec: spec, Reason: fmt.Sprintf("unknown provider %q", kind)}
	}
	if err != nil {
		return nil, err
	}
	return llm.WithRetry(p, llm.RetryConfig{MaxAttempts: opts.MaxAttempts, Clock: opts.Clock, Logger: opts.Logger}), nil
}
