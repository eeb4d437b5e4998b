package usage

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/raven-agent/raven/internal/configtype"
)

// Scopes a cap can name besides one origin.
const (
	// ScopeAmbient sums the ambient origins (Sentinel, heartbeat,
	// discovery, behaviours extractor).
	ScopeAmbient = "ambient"
	// ScopeTotal sums every origin.
	ScopeTotal = "total"
)

// Origins Raven charges model calls to: the turn origins of the spine plus
// the Sentinel's own calls that are not turns.
var (
	// AmbientOrigins start work nobody asked for at that moment: a
	// reached cap pauses them (ambient fails closed).
	AmbientOrigins = []string{"sentinel", "heartbeat", "discovery", "extractor", "analysis"}
	// RequestedOrigins run because the owner asked: a cap on them is shown
	// against spend but never stops them (requested fails open).
	RequestedOrigins = []string{"user", "answer", "cron", "subagent", "router"}
)

// IsAmbient reports whether origin is one a reached cap pauses.
func IsAmbient(origin string) bool {
	for _, o := range AmbientOrigins {
		if o == origin {
			return true
		}
	}
	return false
}

// Config is the "usage" section of config.json: token and money caps and
// the price table money is computed from.
type Config struct {
	// Caps maps a scope — an origin ("sentinel", "heartbeat", "user", …),
	// "ambient" or "total" — to its daily and monthly caps. Reaching a cap
	// on an ambient origin pauses that origin; on "ambient" or "total",
	// every ambient origin. Periods are days and months in the owner's
	// time zone (sentinel.policy's).
	Caps map[string]Cap `json:"caps,omitempty"`
	// Prices maps a model as configured ("openai/gpt-4o-mini") to its price
	// in US dollars per million tokens; money caps need one for every
	// model they count (a model with no price costs 0).
	Prices map[string]Price `json:"prices,omitempty"`
}

// Cap is one scope's caps; 0 means no cap. Tokens are input plus output.
type Cap struct {
	DailyTokens   int64   `json:"daily_tokens,omitempty"`
	MonthlyTokens int64   `json:"monthly_tokens,omitempty"`
	DailyUSD      float64 `json:"daily_usd,omitempty"`
	MonthlyUSD    float64 `json:"monthly_usd,omitempty"`
}

// Price is US dollars per million tokens. Cached is the price of input
// tokens read from the provider's cache (0: billed as Input).
type Price struct {
	Input  float64 `json:"input"`
	Output float64 `json:"output"`
	Cached float64 `json:"cached,omitempty"`
}

// DefaultConfig has no caps and no prices: accounting is always on,
// budgets are the owner's choice.
func DefaultConfig() Config { return Config{} }

// Validate checks every scope name and that no cap or price is negative.
func (c Config) Validate() error {
	for _, scope := range sortedKeys(c.Caps) {
		if !knownScope(scope) {
			return &configtype.FieldError{Field: "caps", Msg: fmt.Sprintf("unknown scope %q (want an origin: %v, %v; or %q, %q)",
				scope, AmbientOrigins, RequestedOrigins, ScopeAmbient, ScopeTotal)}
		}
		cp := c.Caps[scope]
		if cp.DailyTokens < 0 || cp.MonthlyTokens < 0 || bad(cp.DailyUSD) || bad(cp.MonthlyUSD) {
			return &configtype.FieldError{Field: "caps", Msg: fmt.Sprintf("%s: caps must be zero (none) or positive", scope)}
		}
	}
	for _, model := range sortedKeys(c.Prices) {
		p := c.Prices[model]
		if model == "" || bad(p.Input) || bad(p.Output) || bad(p.Cached) {
			return &configtype.FieldError{Field: "prices", Msg: fmt.Sprintf("%q: prices must be zero or positive US dollars per million tokens, under a model name", model)}
		}
	}
	return nil
}

func bad(f float64) bool { return f < 0 || math.IsNaN(f) || math.IsInf(f, 0) }

func knownScope(s string) bool {
	if s == ScopeAmbient || s == ScopeTotal || IsAmbient(s) {
		return true
	}
	for _, o := range RequestedOrigins {
		if o == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Cost is the price of tokens of model in US dollars; a model with no
// price costs 0. The model is looked up as recorded ("openai/gpt-4o-mini"),
// then by its name after the provider ("gpt-4o-mini").
func (c Config) Cost(model string, t Tokens) float64 {
	p, ok := c.Prices[model]
	if !ok {
		if i := strings.IndexByte(model, '/'); i >= 0 {
			p, ok = c.Prices[model[i+1:]]
		}
	}
	if !ok {
		return 0
	}
	cached := p.Cached
	if cached == 0 {
		cached = p.Input
	}
	fresh := t.Input - t.Cached
	if fresh < 0 {
		fresh = 0
	}
	return (float64(fresh)*p.Input + float64(t.Cached)*cached + float64(t.Output)*p.Output) / 1e6
}
