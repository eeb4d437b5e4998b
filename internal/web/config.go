// Package web gives the agent the web: web_fetch (a guarded, bounded fetch that
// turns pages into readable markdown) and web_search (SearXNG, Brave or Tavily).
package web

import (
	"net/netip"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// The defaults of the tools.web section; New applies the same ones to zero
// fields, so a Config built in code behaves like one loaded from the file.
const (
	// DefaultMaxBytes bounds the body read from the network (before
	// conversion): a page larger than this is converted truncated.
	DefaultMaxBytes = 2 << 20
	// DefaultMaxChars bounds the text handed to the model; the tool's
	// max_chars argument may lower it, never raise it.
	DefaultMaxChars = 40_000
	// DefaultFetchTimeout bounds one fetch end to end: connect, redirects
	// and body.
	DefaultFetchTimeout = 20 * time.Second
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "Raven/1.0 (+personal agent; web_fetch)"

	DefaultSearchCount   = 5
	MaxSearchCount       = 20
	DefaultSearchTimeout = 15 * time.Second
	DefaultSafeSearch    = SafeModerate
	// DefaultSearchMaxBytes bounds a search API's response body.
	DefaultSearchMaxBytes = 1 << 20
)

// Search backends.
const (
	BackendSearXNG = "searxng"
	BackendBrave   = "brave"
	BackendTavily  = "tavily"
)

// Safe-search levels.
const (
	SafeOff      = "off"
	SafeModerate = "moderate"
	SafeStrict   = "strict"
)

// The environment variables that give a hosted backend its key; they win
// over the file, as the model providers' keys do.
const (
	EnvBraveAPIKey  = "BRAVE_API_KEY"
	EnvTavilyAPIKey = "TAVILY_API_KEY"
)

// Config is the "tools.web" section of config.json.
type Config struct {
	Fetch  FetchConfig  `json:"fetch"`
	Search SearchConfig `json:"search"`
}

// FetchConfig configures web_fetch.
type FetchConfig struct {
	Enabled bool `json:"enabled"`
	// MaxBytes bounds the bytes read from the network.
	MaxBytes int `json:"max_bytes"`
	// MaxChars bounds the text handed to the model.
	MaxChars     int                 `json:"max_chars"`
	Timeout      configtype.Duration `json:"timeout"`
	MaxRedirects int                 `json:"max_redirects"`
	UserAgent    string              `json:"user_agent"`
	// AllowHosts are host names fetched even when they resolve to an
	// address refused by default (a LAN wiki, a local dev server):
	// "wiki.lan" exactly, "*.lan" for any name under lan.
	AllowHosts []string `json:"allow_hosts,omitempty"`
	// AllowCIDRs are address ranges fetched even though they are refused
	// by default ("192.168.1.0/24", "127.0.0.1/32").
	AllowCIDRs []string `json:"allow_cidrs,omitempty"`
}

// SearchConfig configures web_search. An empty Backend is "not
// configured": the tool is offered and says how to configure it.
type SearchConfig struct {
	// Backend is searxng, brave or tavily.
	Backend string `json:"backend,omitempty"`
	// BaseURL is the SearXNG instance (required for searxng) or overrides
	// a hosted API's endpoint.
	BaseURL string `json:"base_url,omitempty"`
	// APIKey is the hosted API's key (BRAVE_API_KEY / TAVILY_API_KEY win).
	APIKey string `json:"api_key,omitempty" config:"secret"`
	// Count is how many results a search returns unless the call asks.
	Count int `json:"count"`
	// Language is the default result language ("en", "de"); empty: the
	// backend's own default.
	Language   string              `json:"language,omitempty"`
	SafeSearch string              `json:"safe_search"`
	Timeout    configtype.Duration `json:"timeout"`
}

// DefaultConfig returns the documented defaults: fetch on, refusing
// non-public addresses; search not configured.
func DefaultConfig() Config {
	return Config{
		Fetch: FetchConfig{Enabled: true, MaxBytes: DefaultMaxBytes, MaxChars: DefaultMaxChars,
			Timeout: configtype.Duration(DefaultFetchTimeout), MaxRedirects: DefaultMaxRedirects, UserAgent: DefaultUserAgent},
		Search: SearchConfig{Count: DefaultSearchCount, SafeSearch: DefaultSafeSearch,
			Timeout: configtype.Duration(DefaultSearchTimeout)},
	}
}

// withDefaults fills zero fields with the defaults.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	f, s := &c.Fetch, &c.Search
	if f.MaxBytes == 0 {
		f.MaxBytes = d.Fetch.MaxBytes
	}
	if f.MaxChars == 0 {
		f.MaxChars = d.Fetch.MaxChars
	}
	if f.Timeout == 0 {
		f.Timeout = d.Fetch.Timeout
	}
	if f.MaxRedirects == 0 {
		f.MaxRedirects = d.Fetch.MaxRedirects
	}
	if f.UserAgent == "" {
		f.UserAgent = d.Fetch.UserAgent
	}
	if s.Count == 0 {
		s.Count = d.Search.Count
	}
	if s.SafeSearch == "" {
		s.SafeSearch = d.Search.SafeSearch
	}
	if s.Timeout == 0 {
		s.Timeout = d.Search.Timeout
	}
	return c
}

// Validate returns the first invalid setting as a *configtype.FieldError.
func (c Config) Validate() error {
	f, s := c.Fetch, c.Search
	switch {
	case f.MaxBytes < 1024 || f.MaxBytes > 64<<20:
		return configtype.Invalid("fetch.max_bytes", "must be between 1024 and 67108864")
	case f.MaxChars < 256:
		return configtype.Invalid("fetch.max_chars", "must be at least 256")
	case f.Timeout.D() < time.Second || f.Timeout.D() > 10*time.Minute:
		return configtype.Invalid("fetch.timeout", "must be between 1s and 10m")
	case f.MaxRedirects < 1 || f.MaxRedirects > 20:
		// 0 would read as "unset" and become the default, so it is refused
		// rather than silently meaning 5.
		return configtype.Invalid("fetch.max_redirects", "must be 1..20")
	case f.UserAgent == "" || !configtype.OneLine(f.UserAgent):
		return configtype.Invalid("fetch.user_agent", "must be one non-empty line")
	}
	for _, h := range f.AllowHosts {
		if !validHostPattern(h) {
			return configtype.Invalid("fetch.allow_hosts", "%q is not a host name or *.domain pattern", h)
		}
	}
	for _, p := range f.AllowCIDRs {
		if _, err := parseCIDR(p); err != nil {
			return configtype.Invalid("fetch.allow_cidrs", "%q is not an address range like 192.168.1.0/24: %v", p, err)
		}
	}
	switch s.Backend {
	case "", BackendBrave, BackendTavily:
	case BackendSearXNG:
		if s.BaseURL == "" {
			// A SearXNG backend without an instance is unusable; refusing it
			// here is clearer than a failing tool.
			return configtype.Invalid("search.base_url", "the searxng backend needs the instance's URL (e.g. http://127.0.0.1:8888)")
		}
	default:
		return configtype.Invalid("search.backend", "must be %s, %s or %s (empty: not configured)", BackendSearXNG, BackendBrave, BackendTavily)
	}
	switch {
	case s.BaseURL != "" && !configtype.AbsoluteHTTP(s.BaseURL):
		return configtype.Invalid("search.base_url", "want an absolute http(s) URL")
	case !configtype.OneLine(s.APIKey):
		return configtype.Invalid("search.api_key", "must be one line without control characters")
	case s.Count < 1 || s.Count > MaxSearchCount:
		return configtype.Invalid("search.count", "must be 1..%d", MaxSearchCount)
	case !validLanguage(s.Language):
		return configtype.Invalid("search.language", "%q is not a language code like en or pt-BR", s.Language)
	case s.SafeSearch != SafeOff && s.SafeSearch != SafeModerate && s.SafeSearch != SafeStrict:
		return configtype.Invalid("search.safe_search", "must be %s, %s or %s", SafeOff, SafeModerate, SafeStrict)
	case s.Timeout.D() < time.Second || s.Timeout.D() > 5*time.Minute:
		return configtype.Invalid("search.timeout", "must be between 1s and 5m")
	}
	return nil
}

// parseCIDR accepts a prefix or a bare address (a one-address range).
func parseCIDR(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if p.Addr().Is4In6() {
		p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
	}
	return p.Masked(), nil
}

// validHostPattern accepts "name.example", "*.example" and an IP literal.
func validHostPattern(h string) bool {
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// validLanguage accepts "" and BCP 47-ish tags: "en", "pt-BR", "zh-Hans".
func validLanguage(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > 16 {
		return false
	}
	for i, part := range strings.Split(s, "-") {
		if part == "" || len(part) > 8 || (i == 0 && (len(part) < 2 || len(part) > 3)) {
			return false
		}
		for _, r := range part {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				return false
			}
		}
	}
	return true
}
