package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
)

// Issue 12 §3: `raven chat -m` whose model calls web_fetch on a page served
// on loopback. Allow-listed with `raven config set`, the page reaches the
// model as readable, untrusted-wrapped markdown; with the default config
// the fetch is refused as loopback and the model is told why.
func TestChatWebFetchLoopbackPage(t *testing.T) {
	t.Parallel()
	article, err := os.ReadFile("../web/testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(article)
	}))
	defer page.Close()
	for _, tc := range []struct {
		name  string
		allow bool
		want  string
	}{
		{"refused by default", false, "127.0.0.1 is a loopback address: refused by default"},
		{"allow-listed", true, "## Planning for the future"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			if tc.allow {
				e.MustRun("config", "set", "tools.web.fetch.allow_cidrs", "127.0.0.1/32")
			}
			e.Model.Enqueue(fakeopenai.Call("web_fetch", map[string]any{"url": page.URL + "/science/ravens"}))
			e.Model.On(fakeopenai.AfterToolResult(), fakeopenai.Always(fakeopenai.Text("Done reading.")))
			before := hits.Load()
			r := e.MustRun("chat", "-m", "summarise the article at "+page.URL)
			if !strings.Contains(r.Stdout, "Done reading.") {
				t.Fatalf("chat -m:\n%s", r)
			}
			reqs := e.Model.Requests()
			if len(reqs) != 2 || !reqs[0].HasTool("web_fetch") {
				t.Fatalf("web_fetch not offered or not run:\n%s", e.Model)
			}
			got := reqs[1].Last().Content
			if !strings.Contains(got, tc.want) {
				t.Fatalf("tool result the model got:\n%s", got)
			}
			if tc.allow != (hits.Load() > before) {
				t.Fatalf("allow=%v but the page was hit %d times", tc.allow, hits.Load()-before)
			}
			if tc.allow && (!strings.Contains(got, "<<<UNTRUSTED_WEB_CONTENT id=") || strings.Contains(got, "Subscribe to our newsletter")) {
				t.Fatalf("not readable and wrapped:\n%s", got)
			}
		})
	}
}

// Issue 12 §3: web_search through the binary. Unconfigured, the model is
// told what to set; with a SearXNG instance set by `raven config set`
// (a loopback server replaying a recorded JSON answer), the results reach
// the model as compact, untrusted-wrapped text.
func TestChatWebSearch(t *testing.T) {
	t.Parallel()
	recorded, err := os.ReadFile("../web/testdata/searxng.json")
	if err != nil {
		t.Fatal(err)
	}
	var queries atomic.Value
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries.Store(r.URL.Query().Get("q"))
		w.Header().Set("Content-Type", "application/json")
		w.Write(recorded)
	}))
	defer searx.Close()
	for _, tc := range []struct {
		name      string
		configure bool
		want      string
	}{
		{"not configured", false, "web search is not configured: set tools.web.search.backend"},
		{"searxng", true, "1. Common raven - Wikipedia\n   https://en.wikipedia.org/wiki/Common_raven"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Options{})
			if tc.configure {
				e.MustRun("config", "set", "tools.web.search.base_url", searx.URL)
				e.MustRun("config", "set", "tools.web.search.backend", "searxng")
			}
			e.Model.Enqueue(fakeopenai.Call("web_search", map[string]any{"query": "raven intelligence", "count": 2}))
			e.Model.On(fakeopenai.AfterToolResult(), fakeopenai.Always(fakeopenai.Text("Searched.")))
			r := e.MustRun("chat", "-m", "search for raven intelligence")
			reqs := e.Model.Requests()
			if !strings.Contains(r.Stdout, "Searched.") || len(reqs) != 2 || !reqs[0].HasTool("web_search") {
				t.Fatalf("chat -m:\n%s\n%s", r, e.Model)
			}
			got := reqs[1].Last().Content
			if !strings.Contains(got, tc.want) {
				t.Fatalf("tool result the model got:\n%s", got)
			}
			if tc.configure && (queries.Load() != "raven intelligence" || strings.Contains(got, "3. ") || !strings.Contains(got, "<<<END_UNTRUSTED_WEB_CONTENT id=")) {
				t.Fatalf("query %v, result:\n%s", queries.Load(), got)
			}
		})
	}
}
