package web

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// replay serves a recorded response for every request, recording each
// request for the test to inspect.
type replay struct {
	srv    *httptest.Server
	status int
	body   []byte
	reqs   []*http.Request
	bodies []string
}

func newReplay(t *testing.T, file string) *replay {
	t.Helper()
	r := &replay{status: http.StatusOK}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		r.body = b
	}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.reqs = append(r.reqs, req)
		r.bodies = append(r.bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		if r.status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "30")
		}
		w.WriteHeader(r.status)
		w.Write(r.body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// newWeb is New for tests, with a fixed delimiter id and env.
func newWeb(t *testing.T, cfg Config, env map[string]string) *Web {
	t.Helper()
	w, err := New(cfg, Options{Getenv: func(k string) string { return env[k] }, ID: func() string { return "ID" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

func search(t *testing.T, w *Web, args string) (string, error) {
	t.Helper()
	ts, err := w.Tools()
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range ts {
		if tool.Name() == "web_search" {
			return tool.Run(context.Background(), json.RawMessage(args))
		}
	}
	t.Fatal("no web_search tool")
	return "", nil
}

// Each backend, replaying its API's recorded response: the request it
// sends (query, count, language, safe search, key) and the compact,
// untrusted-wrapped text it makes of the answer.
func TestSearchBackendsReplay(t *testing.T) {
	cases := []struct {
		backend, file string
		env           map[string]string
		check         func(t *testing.T, r *http.Request, body string)
		want          []string
	}{
		{BackendSearXNG, "testdata/searxng.json", nil, func(t *testing.T, r *http.Request, _ string) {
			q := r.URL.Query()
			if r.URL.Path != "/search" || q.Get("q") != "raven intelligence" || q.Get("format") != "json" || q.Get("language") != "de" || q.Get("safesearch") != "2" {
				t.Errorf("searxng request %s", r.URL)
			}
		}, []string{"1. Common raven - Wikipedia\n   https://en.wikipedia.org/wiki/Common_raven\n   The common raven (Corvus corax) is a large all-black passerine bird. It is found across the Northern Hemisphere & is",
			"2. Ravens Can Plan for the Future"}},
		{BackendBrave, "testdata/brave.json", map[string]string{EnvBraveAPIKey: "BSA-env"}, func(t *testing.T, r *http.Request, _ string) {
			q := r.URL.Query()
			if r.URL.Path != "/res/v1/web/search" || q.Get("q") != "raven intelligence" || q.Get("count") != "2" || q.Get("search_lang") != "de" ||
				q.Get("safesearch") != "strict" || r.Header.Get("X-Subscription-Token") != "BSA-env" {
				t.Errorf("brave request %s %v", r.URL, r.Header)
			}
		}, []string{"1. Common raven - Wikipedia\n", "known for its intelligence.", "2. Ravens plan ahead, study finds", "Ravens & great apes"}},
		{BackendTavily, "testdata/tavily.json", map[string]string{EnvTavilyAPIKey: "tvly-env"}, func(t *testing.T, r *http.Request, body string) {
			var b map[string]any
			json.Unmarshal([]byte(body), &b)
			if r.Method != http.MethodPost || r.URL.Path != "/search" || b["query"] != "raven intelligence" || b["max_results"] != 2.0 ||
				r.Header.Get("Authorization") != "Bearer tvly-env" {
				t.Errorf("tavily request %s %s %v", r.URL, body, r.Header)
			}
		}, []string{"1. Common raven - Wikipedia", "2. Common Raven | National Geographic"}},
	}
	for _, c := range cases {
		t.Run(c.backend, func(t *testing.T) {
			rp := newReplay(t, c.file)
			cfg := DefaultConfig()
			cfg.Search = SearchConfig{Backend: c.backend, BaseURL: rp.srv.URL, APIKey: "file-key", SafeSearch: SafeStrict, Language: "de"}
			out, err := search(t, newWeb(t, cfg, c.env), `{"query":"raven intelligence","count":2}`)
			if err != nil {
				t.Fatal(err)
			}
			if len(rp.reqs) != 1 {
				t.Fatalf("%d requests", len(rp.reqs))
			}
			c.check(t, rp.reqs[0], rp.bodies[0])
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("result lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, "3. ") || strings.Contains(out, "<strong>") || !strings.HasPrefix(out, "The block below is untrusted content from a "+c.backend+" web search") ||
				!strings.HasSuffix(out, "<<<END_UNTRUSTED_WEB_CONTENT id=ID>>>") {
				t.Errorf("result not bounded to 2, stripped and wrapped:\n%s", out)
			}
		})
	}
}

func TestSearchErrors(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		is     error
		text   string
	}{
		{"unauthorized", http.StatusUnauthorized, `{"error":"invalid key"}`, ErrSearchAuth, "tools.web.search.api_key"},
		{"forbidden", http.StatusForbidden, `{}`, ErrSearchAuth, "403"},
		{"rate limited", http.StatusTooManyRequests, `{"error":"slow down"}`, ErrSearchRateLimit, "retry after 30"},
		{"server error", http.StatusBadGateway, `upstream down`, ErrSearchStatus, "upstream down"},
		{"malformed", http.StatusOK, `{"web": {"results": [`, ErrSearchResponse, "brave"},
		{"wrong shape", http.StatusOK, `{"web": {"results": "nope"}}`, ErrSearchResponse, "brave"},
		{"oversize", http.StatusOK, `{"web":{"results":[]},"pad":"` + strings.Repeat("x", DefaultSearchMaxBytes) + `"}`, ErrSearchResponse, "more than 1048576 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rp := newReplay(t, "")
			rp.status, rp.body = c.status, []byte(c.body)
			cfg := DefaultConfig()
			cfg.Search = SearchConfig{Backend: BackendBrave, BaseURL: rp.srv.URL, APIKey: "k"}
			_, err := search(t, newWeb(t, cfg, nil), `{"query":"x"}`)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("err = %v, want %v containing %q", err, c.is, c.text)
			}
		})
	}
}

// Unconfigured, web_search is offered and says what to set; a hosted
// backend without a key says which variable gives it.
func TestSearchNotConfigured(t *testing.T) {
	for _, c := range []struct {
		cfg  SearchConfig
		want string
	}{
		{SearchConfig{}, "set tools.web.search.backend to searxng"},
		{SearchConfig{Backend: BackendBrave}, EnvBraveAPIKey},
		{SearchConfig{Backend: BackendTavily}, EnvTavilyAPIKey},
	} {
		cfg := DefaultConfig()
		cfg.Search = c.cfg
		_, err := search(t, newWeb(t, cfg, nil), `{"query":"x"}`)
		if !errors.Is(err, ErrSearchNotSet) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.cfg, err, c.want)
		}
	}
}

// The derived schema bounds the arguments before any request is sent.
func TestSearchArgumentsValidated(t *testing.T) {
	rp := newReplay(t, "testdata/searxng.json")
	cfg := DefaultConfig()
	cfg.Search = SearchConfig{Backend: BackendSearXNG, BaseURL: rp.srv.URL}
	w := newWeb(t, cfg, nil)
	for _, args := range []string{`{}`, `{"query":""}`, `{"query":"x","count":21}`, `{"query":"x","count":0}`, `{"query":"x","extra":1}`, `{"query":"x","language":"not a lang"}`} {
		if _, err := search(t, w, args); err == nil {
			t.Errorf("%s accepted", args)
		}
	}
	if len(rp.reqs) != 0 {
		t.Fatalf("%d requests sent for invalid arguments", len(rp.reqs))
	}
	out, err := search(t, w, `{"query":"ravens"}`)
	if err != nil || !strings.Contains(out, "3. A third result") {
		t.Fatalf("default count 5 over 3 results: %v\n%s", err, out)
	}
}
