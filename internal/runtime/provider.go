package runtime

import (
	"context"
	"errors"
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
	"github.com/raven-agent/raven/internal/llm/providers"
)

// OllamaBaseURL is Ollama's OpenAI-compatible endpoint.
const OllamaBaseURL = providers.OllamaBaseURL

// NewProvider builds the configured model with retries. No model configured
// yields llm.ErrNoModel. Environment secrets and base URLs win over the file.
func NewProvider(cfg config.Config, clk clock.Clock, log *slog.Logger) (llm.Provider, error) {
	name, _, _ := strings.Cut(cfg.Model, "/")
	key, base := endpoint(cfg, name)
	p, err := providers.New(cfg.Model, providers.Options{APIKey: key, BaseURL: base, Clock: clk, Logger: log,
		MaxAttempts: cfg.Providers.MaxAttempts, Timeout: cfg.Providers.Timeout.D()})
	if err != nil && !errors.Is(err, llm.ErrNoModel) {
		return nil, fmt.Errorf("model %s: %w", cfg.Model, err)
	}
	return p, err
}

// endpoint resolves a provider's key and base URL: environment first.
func endpoint(cfg config.Config, provider string) (key, base string) {
	pc := cfg.Providers
	switch provider {
	case "openai":
		return firstNonEmpty(os.Getenv("OPENAI_API_KEY"), pc.OpenAI.APIKey), firstNonEmpty(os.Getenv("OPENAI_BASE_URL"), pc.OpenAI.BaseURL)
	case "ollama":
		return firstNonEmpty(pc.Ollama.APIKey, "ollama"), firstNonEmpty(os.Getenv("OLLAMA_BASE_URL"), pc.Ollama.BaseURL, OllamaBaseURL)
	case "anthropic":
		return firstNonEmpty(os.Getenv("ANTHROPIC_API_KEY"), pc.Anthropic.APIKey), firstNonEmpty(os.Getenv("ANTHROPIC_BASE_URL"), pc.Anthropic.BaseURL)
	}
	return "", ""
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
	key, base := endpoint(cfg, name)
	switch name {
	case "openai", "ollama":
		if key != "" {
			h.Set("Authorization", "Bearer "+key)
		}
		return strings.TrimRight(firstNonEmpty(base, openai.DefaultBaseURL), "/") + "/models", h
	case "anthropic":
		h.Set("x-api-key", key)
		h.Set("anthropic-version", "2023-06-01")
		return strings.TrimRight(firstNonEmpty(base, anthropic.DefaultBaseURL), "/") + "/v1/models", h
	}
	return "", nil
}

// buildModels chooses the models in this one place: the runtime's (the
// override, else config "model", else none; NoModel: none) and the Sentinel
// planner's (the override, else sentinel.planner_model, else config
// "model"). NoModel keeps only turns model-free: the planner runs no tick in
// those processes, and saying "no model configured" there would be false.
func (r *Runtime) buildModels(_ context.Context, o Options) error {
	configured, err := NewProvider(r.cfg, r.clk, r.log)
	switch {
	case o.Provider != nil:
		configured, err = o.Provider, nil
	case errors.Is(err, llm.ErrNoModel):
		configured, err = nil, nil
		if !o.NoModel {
			r.log.Info("no model configured: chat replies explain how to set one; cron deliveries that need no model still go out")
		}
	case err != nil && o.NoModel:
		// Nothing here calls it: a model this process could not use
		// (no API key in its environment) is no reason to refuse.
		r.log.Debug("configured model not built; this process runs none", "err", err)
		// A stand-in keeps the parts that only log about the planner from
		// saying "no model configured" when one is; nothing here calls it.
		configured, err = unbuiltModel{name: r.cfg.Model, err: err}, nil
	}
	if err != nil {
		return err
	}
	if !o.NoModel {
		r.provider = configured
	}
	r.planner = configured
	switch spec := r.cfg.Sentinel.PlannerModel; {
	case o.PlannerProvider != nil:
		r.planner = o.PlannerProvider
	case spec != "" && !o.NoModel:
		c := r.cfg
		c.Model = spec
		p, err := NewProvider(c, r.clk, r.log)
		if err != nil {
			return fmt.Errorf("sentinel.planner_model: %w", err)
		}
		r.planner = p
	}
	// One meter in front of every model: each call recorded, ambient
	// calls held to the caps.
	r.provider, r.planner = r.meter.Wrap(r.provider), r.meter.Wrap(r.planner)
	return nil
}

// unbuiltModel stands for a configured model a NoModel process could not
// build (no API key in its environment): it names the model and refuses
// every call with the build error.
type unbuiltModel struct {
	name string
	err  error
}

func (m unbuiltModel) Name() string { return m.name }

func (m unbuiltModel) Chat(context.Context, llm.Request) (*llm.Response, error) {
	return nil, fmt.Errorf("model %s not available in this process: %w", m.name, m.err)
}
