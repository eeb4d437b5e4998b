package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// Errors of web_search backends.
var (
	ErrSearchNotSet    = errors.New("web: web search is not configured")
	ErrSearchAuth      = errors.New("web: search API refused the key")
	ErrSearchRateLimit = errors.New("web: search API rate limit")
	ErrSearchStatus    = errors.New("web: search API error status")
	ErrSearchResponse  = errors.New("web: search API response unreadable")
)

// Query is one search.
type Query struct {
	Text       string
	Count      int
	Language   string // "" : the backend's default
	SafeSearch string // SafeOff, SafeModerate or SafeStrict
}

// Result is one search hit.
type Result struct {
	Title   string
	URL     string
	Snippet string
}

// Backend is a search API.
type Backend interface {
	Name() string
	Search(ctx context.Context, q Query) ([]Result, error)
}

// NewBackend builds cfg's backend; nil (no error) when none is configured.
// apiKey is the key to use (the environment's or the file's).
func NewBackend(cfg SearchConfig, apiKey string, client *http.Client) (Backend, error) {
	api := apiClient{client: client, maxBytes: DefaultSearchMaxBytes}
	switch cfg.Backend {
	case "":
		return nil, nil
	case BackendSearXNG:
		if cfg.BaseURL == "" {
			return nil, fmt.Errorf("%w: searxng needs tools.web.search.base_url", ErrSearchNotSet)
		}
		return &SearXNG{BaseURL: strings.TrimRight(cfg.BaseURL, "/"), api: api}, nil
	case BackendBrave:
		if apiKey == "" {
			return nil, fmt.Errorf("%w: brave needs an API key: set %s or tools.web.search.api_key", ErrSearchNotSet, EnvBraveAPIKey)
		}
		return &Brave{BaseURL: firstNonEmpty(strings.TrimRight(cfg.BaseURL, "/"), DefaultBraveURL), Key: apiKey, api: api}, nil
	case BackendTavily:
		if apiKey == "" {
			return nil, fmt.Errorf("%w: tavily needs an API key: set %s or tools.web.search.api_key", ErrSearchNotSet, EnvTavilyAPIKey)
		}
		return &Tavily{BaseURL: firstNonEmpty(strings.TrimRight(cfg.BaseURL, "/"), DefaultTavilyURL), Key: apiKey, api: api}, nil
	}
	return nil, fmt.Errorf("%w: unknown backend %q", ErrSearchNotSet, cfg.Backend)
}

// apiClient is what the backends share: one bounded JSON exchange.
type apiClient struct {
	client   *http.Client
	maxBytes int64
}

// do sends req and decodes its JSON answer into v, turning the statuses a
// search API answers with into the typed errors above.
func (c apiClient) do(req *http.Request, backend string, v any) error {
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", backend, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, c.maxBytes+1))
	if err != nil {
		return fmt.Errorf("%s: read response: %w", backend, err)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("%w: %s answered %s; check tools.web.search.api_key (or the backend's environment variable)", ErrSearchAuth, backend, resp.Status)
	case resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("%w: %s answered %s%s; try again later", ErrSearchRateLimit, backend, resp.Status, retryAfter(resp))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return fmt.Errorf("%w: %s answered %s: %s", ErrSearchStatus, backend, resp.Status, excerpt(body))
	case int64(len(body)) > c.maxBytes:
		return fmt.Errorf("%w: %s sent more than %d bytes", ErrSearchResponse, backend, c.maxBytes)
	}
	// The APIs' responses carry many fields Raven does not read and grow
	// new ones: a tolerant decode of the fields it needs, not strictjson.
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSearchResponse, backend, err)
	}
	return nil
}

func retryAfter(resp *http.Response) string {
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		return " (retry after " + oneLine(ra) + ")"
	}
	return ""
}

func excerpt(b []byte) string {
	s, cut := truncate(strings.TrimSpace(strings.ToValidUTF8(string(b), "?")), 200)
	if cut {
		s += "…"
	}
	return oneLine(s)
}

var tags = regexp.MustCompile(`<[^>]*>`)

// plain strips the markup some APIs put in snippets (<strong>, &amp;).
func plain(s string) string {
	s = html.UnescapeString(tags.ReplaceAllString(s, ""))
	return strings.Join(strings.Fields(s), " ")
}

// renderResults is web_search's result text: one compact block per hit.
func renderResults(backend, query string, rs []Result, id string) string {
	var b strings.Builder
	if len(rs) == 0 {
		b.WriteString("No results.\n")
	}
	for i, r := range rs {
		fmt.Fprintf(&b, "%d. %s\n   %s\n", i+1, oneLine(r.Title), oneLine(r.URL))
		if r.Snippet != "" {
			snip, cut := truncate(r.Snippet, 400)
			if cut {
				snip += "…"
			}
			fmt.Fprintf(&b, "   %s\n", oneLine(snip))
		}
	}
	return Untrusted(fmt.Sprintf("a %s web search for %q", backend, oneLine(query)), b.String(), id)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
