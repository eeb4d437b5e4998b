package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/configtype"
)

// loopback serves h on 127.0.0.1 and returns its port.
func loopback(t *testing.T, h http.Handler) (*httptest.Server, string) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return srv, u.Port()
}

// fetcher is a Fetcher whose DNS maps names to addresses and which allows
// what allow says, with cfg's limits over the defaults.
func fetcher(t *testing.T, cfg FetchConfig, names map[string]string) *Fetcher {
	t.Helper()
	var res *net.Resolver
	if names != nil {
		res = fakeResolver(t, names)
	}
	f, err := NewFetcher(cfg, FetcherOptions{Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func TestFetchRefusesLoopbackByDefault(t *testing.T) {
	var hits int
	srv, port := loopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	f := fetcher(t, FetchConfig{}, map[string]string{"public.example": "127.0.0.1"})
	for _, u := range []string{srv.URL, "http://public.example:" + port + "/", "http://[::ffff:127.0.0.1]:" + port + "/", "http://localhost:" + port + "/"} {
		_, err := f.Fetch(context.Background(), u, 0)
		var be *BlockedError
		if !errors.As(err, &be) || be.Class != "loopback" {
			t.Errorf("%s: err = %v, want a loopback refusal", u, err)
		}
	}
	if hits != 0 {
		t.Fatalf("the refused server was reached %d times", hits)
	}
}

func TestFetchRefusesBadURLs(t *testing.T) {
	f := fetcher(t, FetchConfig{}, nil)
	for _, u := range []string{"ftp://example.com/x", "file:///etc/passwd", "gopher://x", "http://", "::not a url", "http://169.254.169.254/latest/meta-data/",
		"http://metadata.google.internal/computeMetadata/v1/", "http://[fd00:ec2::254]/"} {
		if _, err := f.Fetch(context.Background(), u, 0); !errors.Is(err, ErrBadURL) && !errors.Is(err, ErrBlockedAddress) {
			t.Errorf("%s: err = %v", u, err)
		}
	}
}

// A redirect is checked like the first URL: to a literal private address,
// to a name that resolves to one, to another scheme — each refused, and
// the private server never sees a request.
func TestFetchRedirectToPrivateRefused(t *testing.T) {
	var privateHits int
	_, privPort := loopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { privateHits++ }))
	var target string
	_, port := loopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	}))
	names := map[string]string{"public.example": "127.0.0.1", "internal.example": "127.0.0.1"}
	f := fetcher(t, FetchConfig{AllowHosts: []string{"public.example"}}, names)
	for _, tc := range []struct {
		target string
		is     error
	}{
		{"http://internal.example:" + privPort + "/admin", ErrBlockedAddress},
		{"http://127.0.0.1:" + privPort + "/admin", ErrBlockedAddress},
		{"http://169.254.169.254/latest/meta-data/", ErrBlockedAddress},
		{"http://[::ffff:7f00:1]:" + privPort + "/", ErrBlockedAddress},
		{"file:///etc/passwd", ErrBadURL},
	} {
		target = tc.target
		_, err := f.Fetch(context.Background(), "http://public.example:"+port+"/start", 0)
		t.Logf("redirect to %s: %v", tc.target, err)
		if !errors.Is(err, tc.is) {
			t.Errorf("redirect to %s: err = %v, want %v", tc.target, err, tc.is)
		}
	}
	if privateHits != 0 {
		t.Fatalf("the private server was reached %d times through redirects", privateHits)
	}
}

func TestFetchLimits(t *testing.T) {
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("0123456789", 10_000))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	mux.HandleFunc("/loop/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		http.Redirect(w, r, fmt.Sprintf("/loop/%d", n+1), http.StatusFound)
	})
	mux.HandleFunc("/hop/{n}", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscan(r.PathValue("n"), &n)
		if n == 0 {
			fmt.Fprint(w, "arrived")
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), http.StatusFound)
	})
	srv, _ := loopback(t, mux)
	t.Cleanup(func() { close(release) })
	f := fetcher(t, FetchConfig{AllowCIDRs: []string{"127.0.0.1/32"}, MaxBytes: 4096, MaxChars: 1000, MaxRedirects: 3,
		Timeout: configtype.Duration(300 * time.Millisecond)}, nil)

	res, err := f.Fetch(context.Background(), srv.URL+"/big", 0)
	if err != nil || !res.BodyTruncated || res.Bytes != 4096 || !res.TextTruncated || len(res.Text) != 1000 {
		t.Fatalf("big: %+v %v", res, err)
	}
	out := res.render("id1")
	if !strings.Contains(out, "larger than the 4096 bytes read") || !strings.Contains(out, "cut to 1000 characters") {
		t.Fatalf("truncation not reported:\n%s", out)
	}
	if res, err := f.Fetch(context.Background(), srv.URL+"/big", 50); err != nil || len(res.Text) != 50 {
		t.Fatalf("max_chars 50: %d chars, %v", len(res.Text), err)
	}

	start := time.Now()
	if _, err := f.Fetch(context.Background(), srv.URL+"/slow", 0); !errors.Is(err, ErrFetchTimeout) {
		t.Fatalf("slow: err = %v, want ErrFetchTimeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the timeout took %s", took)
	}

	if _, err := f.Fetch(context.Background(), srv.URL+"/loop/0", 0); !errors.Is(err, ErrTooManyRedirects) {
		t.Fatalf("redirect loop: err = %v", err)
	}
	if res, err := f.Fetch(context.Background(), srv.URL+"/hop/3", 0); err != nil || res.Text != "arrived" || !strings.HasSuffix(res.URL, "/hop/0") {
		t.Fatalf("three redirects (the limit): %+v %v", res, err)
	}
}

func TestFetchContentTypes(t *testing.T) {
	article, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	serve := func(path, ct string, body []byte) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			if ct != "" {
				w.Header().Set("Content-Type", ct)
			}
			w.Write(body)
		})
	}
	serve("/article", "text/html; charset=utf-8", article)
	serve("/notes.txt", "text/plain", []byte("plain notes\n"))
	serve("/data", "application/json", []byte(`{"a":[1,2],"b":"c"}`))
	serve("/latin1", "text/plain; charset=iso-8859-1", []byte("caf\xe9"))
	serve("/feed", "application/rss+xml", []byte(`<rss version="2.0"><channel><title>Corvids</title></channel></rss>`))
	serve("/image", "image/png", []byte("\x89PNG\r\n\x1a\n"))
	serve("/pdf", "application/pdf", []byte("%PDF-1.4"))
	serve("/sniffed", "", []byte("<!DOCTYPE html><html><head><title>Sniffed</title></head><body><p>hello</p></body></html>"))
	mux.HandleFunc("/missing", http.NotFound)
	srv, _ := loopback(t, mux)
	f := fetcher(t, FetchConfig{AllowCIDRs: []string{"127.0.0.1"}}, nil)
	ctx := context.Background()

	res, err := f.Fetch(ctx, srv.URL+"/article", 0)
	if err != nil || res.ContentType != "text/html" || !strings.Contains(res.Text, "## Planning for the future") || strings.Contains(res.Text, "Trending now") {
		t.Fatalf("article: %+v %v", res, err)
	}
	if res, err := f.Fetch(ctx, srv.URL+"/notes.txt", 0); err != nil || res.Text != "plain notes\n" {
		t.Fatalf("text: %+v %v", res, err)
	}
	if res, err := f.Fetch(ctx, srv.URL+"/data", 0); err != nil || !strings.Contains(res.Text, "\"a\": [\n") {
		t.Fatalf("json: %+v %v", res, err)
	}
	if res, err := f.Fetch(ctx, srv.URL+"/latin1", 0); err != nil || res.Text != "café" {
		t.Fatalf("latin1: %q %v", res.Text, err)
	}
	if res, err := f.Fetch(ctx, srv.URL+"/feed", 0); err != nil || !strings.Contains(res.Text, "<title>Corvids</title>") {
		t.Fatalf("feed: %+v %v", res, err)
	}
	if res, err := f.Fetch(ctx, srv.URL+"/sniffed", 0); err != nil || res.Title != "Sniffed" {
		t.Fatalf("sniffed: %+v %v", res, err)
	}
	for _, p := range []string{"/image", "/pdf"} {
		if _, err := f.Fetch(ctx, srv.URL+p, 0); !errors.Is(err, ErrUnsupportedType) || !strings.Contains(err.Error(), "HTML, plain text, XML feeds and JSON only") {
			t.Errorf("%s: err = %v", p, err)
		}
	}
	if _, err := f.Fetch(ctx, srv.URL+"/missing", 0); !errors.Is(err, ErrHTTPStatus) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("404: err = %v", err)
	}
}
