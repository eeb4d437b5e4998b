package sentinel

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/sentinel/attention"
	"github.com/raven-agent/raven/internal/sentinel/predictor"
	"github.com/raven-agent/raven/internal/statefile"
)

// AnalysisConfig configures the daily analysis service and the attention
// producers that read it.
type AnalysisConfig struct {
	// Enabled turns on the one model call a day (default false: it sends
	// MEMORY.md and the recent history to the model).
	Enabled bool `json:"enabled"`
	// Hour is the local hour from which the day's call is made (default 6).
	Hour int `json:"hour"`
}

// Attention sections the analysis producers own.
const (
	SectionCommitments = "Commitments"
	SectionThemes      = "On their mind"
)

// newAnalysis builds the service when it is enabled and a model exists.
func newAnalysis(o SystemOptions, store *statefile.Store, clk clock.Clock, log *slog.Logger) (*predictor.DailyAnalysis, error) {
	ac := o.Config.Analysis
	if !ac.Enabled {
		return nil, nil
	}
	if o.Provider == nil {
		log.Info("sentinel: daily analysis enabled but no model is configured; it stays off")
		return nil, nil
	}
	cfg := o.Config
	return predictor.NewDailyAnalysis(predictor.DailyAnalysisOptions{
		Provider: o.Provider, Model: o.Model, Store: store, Hour: ac.Hour,
		Input: func(context.Context) (string, string) {
			mem, _ := memory.ReadBounded(o.Paths.Memory, int64(cfg.MemoryMaxBytes))
			hist, _ := memory.ReadTail(o.Paths.History, cfg.HistoryTailBytes)
			return mem, hist
		},
		Location: cfg.Policy.Location, Clock: clk, Logger: log,
	})
}

// analysisProducers are the LLM-backed attention producers: both read the
// day's one analysis, so two sections cost one call.
func analysisProducers(a *predictor.DailyAnalysis) []attention.Producer {
	return []attention.Producer{commitmentsProducer{a}, themesProducer{a}}
}

// withAnalysisSections adds the analysis sections to the planner's view of
// attention.md when the owner did not choose the sections themselves.
func withAnalysisSections(sections []string) []string {
	out := slices.Clone(sections)
	for _, s := range []string{SectionCommitments, SectionThemes} {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

type commitmentsProducer struct{ a *predictor.DailyAnalysis }

func (commitmentsProducer) Section() string { return SectionCommitments }

func (p commitmentsProducer) Produce(ctx context.Context, _ attention.Input) (string, error) {
	an, _ := p.a.Latest(ctx)
	var b strings.Builder
	for _, c := range an.Commitments {
		if c.Due != "" {
			fmt.Fprintf(&b, "- %s (%s)\n", c.Text, c.Due)
		} else {
			fmt.Fprintf(&b, "- %s\n", c.Text)
		}
	}
	return b.String(), nil
}

type themesProducer struct{ a *predictor.DailyAnalysis }

func (themesProducer) Section() string { return SectionThemes }

func (p themesProducer) Produce(ctx context.Context, _ attention.Input) (string, error) {
	an, _ := p.a.Latest(ctx)
	if len(an.Themes) == 0 {
		return "", nil
	}
	return "- " + strings.Join(an.Themes, "\n- ") + "\n", nil
}
