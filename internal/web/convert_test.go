package web

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
)

// A readable article page becomes markdown of the article alone: headings,
// lists, emphasis, absolute links and code kept; navigation, cookie
// banner, sidebar, ads, footer and scripts stripped.
func TestConvertArticleStripsBoilerplate(t *testing.T) {
	body, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("https://gazette.example/science/ravens")
	p, err := NewConverter().Convert(context.Background(), body, u)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Readable || !strings.Contains(p.Title, "How ravens solve puzzles") {
		t.Fatalf("readable=%v title=%q", p.Readable, p.Title)
	}
	for _, want := range []string{
		"## Planning for the future",
		"**delayed gratification**",
		"- Ravens select tools for a task",
		"[the journal](https://gazette.example/papers/ravens-planning.pdf)",
		"score = choices_correct / trials",
		"seventeen hours",
	} {
		if !strings.Contains(p.Markdown, want) {
			t.Errorf("markdown lacks %q:\n%s", want, p.Markdown)
		}
	}
	for _, boiler := range []string{"Shop our merchandise", "Accept all cookies", "Trending now", "ADVERTISEMENT",
		"Subscribe to our newsletter", "All rights reserved", "tracker", "font-family", "Log in"} {
		if strings.Contains(p.Markdown, boiler) {
			t.Errorf("boilerplate %q kept:\n%s", boiler, p.Markdown)
		}
	}
}

// A page too short to score still comes through, with its <title>.
func TestConvertShortPage(t *testing.T) {
	u, _ := url.Parse("http://x.example/")
	p, err := NewConverter().Convert(context.Background(), []byte(`<html><head><title>Tiny</title></head><body><p>Just <em>one</em> line.</p></body></html>`), u)
	if err != nil {
		t.Fatal(err)
	}
	if p.Title != "Tiny" || !strings.Contains(p.Markdown, "Just *one* line.") {
		t.Fatalf("fallback: %+v", p)
	}
}

// A page with nothing readable is not an error: readability gives up and
// the whole (empty) page is converted, marked as not an article.
func TestConvertNothingReadable(t *testing.T) {
	u, _ := url.Parse("http://x.example/")
	p, err := NewConverter().Convert(context.Background(), []byte(`<html><head><title>Blank</title></head><body><script>x()</script></body></html>`), u)
	if err != nil || p.Readable || p.Title != "Blank" || p.Markdown != "" {
		t.Fatalf("blank page: %+v %v", p, err)
	}
}

// bigPage is a ~100 KB article page with boilerplate around it.
func bigPage(tb testing.TB) []byte {
	tb.Helper()
	body, err := os.ReadFile("testdata/article.html")
	if err != nil {
		tb.Fatal(err)
	}
	s := string(body)
	start, end := strings.Index(s, "<h2>Planning"), strings.Index(s, "</article>")
	section := s[start:end]
	var b strings.Builder
	b.WriteString(s[:end])
	for b.Len() < 100<<10 {
		b.WriteString(section)
	}
	b.WriteString(s[end:])
	return []byte(b.String())
}

// BenchmarkConvert100KB is the HTML→markdown path of web_fetch on a
// ~100 KB page (readability then html-to-markdown).
func BenchmarkConvert100KB(b *testing.B) {
	page := bigPage(b)
	u, _ := url.Parse("https://gazette.example/science/ravens")
	c := NewConverter()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Convert(context.Background(), page, u); err != nil {
			b.Fatal(err)
		}
	}
}
