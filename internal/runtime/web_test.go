package runtime

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/llm/fakeopenai"
	"github.com/raven-agent/raven/internal/llm/openai"
)

// fakeModel is Raven's real OpenAI provider on the fake model server.
func fakeModel(t *testing.T) (*fakeopenai.Server, *openai.Provider) {
	t.Helper()
	s := fakeopenai.Start(t, fakeopenai.Options{})
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(hc.CloseIdleConnections)
	p, err := openai.New(openai.Config{Model: fakeopenai.DefaultModel, BaseURL: s.BaseURL(), APIKey: "x", HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return s, p
}

// The assembled runtime offers web_fetch and web_search with the default
// config; a web_fetch the model calls on a local page (allow-listed) reaches
// the next model request as readable, untrusted-wrapped markdown. Without
// the allow-list the same call is refused as loopback and the model is told.
func TestWebFetchThroughRuntime(t *testing.T) {
	article, err := os.ReadFile("../web/testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(article)
	}))
	defer page.Close()
	for _, tc := range []struct {
		name  string
		allow []string
		want  string
	}{
		{"allow-listed", []string{"127.0.0.1/32"}, "## Planning for the future"},
		{"default", nil, "127.0.0.1 is a loopback address: refused by default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, prov := fakeModel(t)
			model.Enqueue(fakeopenai.Call("web_fetch", map[string]any{"url": page.URL + "/science/ravens"}))
			model.On(fakeopenai.AfterToolResult(), fakeopenai.Always(fakeopenai.Text("Ravens plan ahead.")))
			rt, _ := newApp(t, false, prov, func(o *Options) {
				o.Config.Tools.Web.Fetch.AllowCIDRs = tc.allow
			})
			if reply := turn(t, rt, "what does this article say?"); reply != "Ravens plan ahead." {
				t.Fatalf("reply %q", reply)
			}
			reqs := model.Requests()
			if len(reqs) != 2 || !reqs[0].HasTool("web_fetch") || !reqs[0].HasTool("web_search") {
				t.Fatalf("requests:\n%s", model)
			}
			got := reqs[1].Last()
			if got.Role != "tool" || !strings.Contains(got.Content, tc.want) {
				t.Fatalf("tool result did not reach the model:\n%s", got.Content)
			}
			if tc.allow != nil && (!strings.Contains(got.Content, "<<<UNTRUSTED_WEB_CONTENT id=") || strings.Contains(got.Content, "Trending now")) {
				t.Fatalf("result not readable and wrapped:\n%s", got.Content)
			}
		})
	}
}

// web_search is offered with the default config and tells the model what
// to configure; with a backend configured its results reach the model.
func TestWebSearchThroughRuntime(t *testing.T) {
	recorded, err := os.ReadFile("../web/testdata/searxng.json")
	if err != nil {
		t.Fatal(err)
	}
	searx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(recorded)
	}))
	defer searx.Close()
	for _, tc := range []struct {
		name, backend, want string
	}{
		{"default", "", "web search is not configured: set tools.web.search.backend to searxng"},
		{"searxng", "searxng", "2. Ravens Can Plan for the Future\n   https://www.audubon.org/news/ravens-planning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model, prov := fakeModel(t)
			model.Enqueue(fakeopenai.Call("web_search", map[string]any{"query": "raven intelligence"}))
			model.On(fakeopenai.AfterToolResult(), fakeopenai.Always(fakeopenai.Text("ok")))
			rt, _ := newApp(t, false, prov, func(o *Options) {
				o.Config.Tools.Web.Search.Backend, o.Config.Tools.Web.Search.BaseURL = tc.backend, searx.URL
			})
			turn(t, rt, "search")
			reqs := model.Requests()
			if len(reqs) != 2 || !strings.Contains(reqs[1].Last().Content, tc.want) {
				t.Fatalf("tool result:\n%s", model)
			}
		})
	}
}
