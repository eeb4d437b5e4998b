package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// The hosted APIs' endpoints (tools.web.search.base_url overrides them).
const (
	DefaultBraveURL  = "https://api.search.brave.com"
	DefaultTavilyURL = "https://api.tavily.com"
)

// SearXNG is a SearXNG instance's JSON API (GET /search?format=json); the
// instance must list json in search.formats of its settings.yml.
type SearXNG struct {
	BaseURL string
	api     apiClient
}

func (s *SearXNG) Name() string { return BackendSearXNG }

func (s *SearXNG) Search(ctx context.Context, q Query) ([]Result, error) {
	v := url.Values{"q": {q.Text}, "format": {"json"}, "pageno": {"1"}}
	if q.Language != "" {
		v.Set("language", q.Language)
	}
	v.Set("safesearch", map[string]string{SafeOff: "0", SafeModerate: "1", SafeStrict: "2"}[q.SafeSearch])
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.BaseURL+"/search?"+v.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("searxng: %w", err)
	}
	var out struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := s.api.do(req, BackendSearXNG, &out); err != nil {
		return nil, err
	}
	var rs []Result
	for _, r := range out.Results {
		if len(rs) == q.Count {
			break // SearXNG has no count parameter: it returns a page
		}
		rs = append(rs, Result{Title: plain(r.Title), URL: r.URL, Snippet: plain(r.Content)})
	}
	return rs, nil
}

// Brave is the Brave Search API (GET /res/v1/web/search).
type Brave struct {
	BaseURL, Key string
	api          apiClient
}

func (b *Brave) Name() string { return BackendBrave }

func (b *Brave) Search(ctx context.Context, q Query) ([]Result, error) {
	v := url.Values{"q": {q.Text}, "count": {strconv.Itoa(q.Count)}, "safesearch": {q.SafeSearch}}
	if q.Language != "" {
		v.Set("search_lang", q.Language)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.BaseURL+"/res/v1/web/search?"+v.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("brave: %w", err)
	}
	req.Header.Set("X-Subscription-Token", b.Key)
	var out struct {
		Web struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := b.api.do(req, BackendBrave, &out); err != nil {
		return nil, err
	}
	var rs []Result
	for _, r := range out.Web.Results {
		if len(rs) == q.Count {
			break
		}
		rs = append(rs, Result{Title: plain(r.Title), URL: r.URL, Snippet: plain(r.Description)})
	}
	return rs, nil
}

// Tavily is the Tavily search API (POST /search). It has no language or
// safe-search parameter; those settings do not apply to it.
type Tavily struct {
	BaseURL, Key string
	api          apiClient
}

func (t *Tavily) Name() string { return BackendTavily }

func (t *Tavily) Search(ctx context.Context, q Query) ([]Result, error) {
	body, err := json.Marshal(map[string]any{"query": q.Text, "max_results": q.Count, "search_depth": "basic", "topic": "general"})
	if err != nil {
		return nil, fmt.Errorf("tavily: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.BaseURL+"/search", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("tavily: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.Key)
	var out struct {
		Results []struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := t.api.do(req, BackendTavily, &out); err != nil {
		return nil, err
	}
	var rs []Result
	for _, r := range out.Results {
		if len(rs) == q.Count {
			break
		}
		rs = append(rs, Result{Title: plain(r.Title), URL: r.URL, Snippet: plain(r.Content)})
	}
	return rs, nil
}
