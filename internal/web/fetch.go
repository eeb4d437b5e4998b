package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/net/html/charset"
)

// Errors of web_fetch; each refusal wraps one of them (or ErrBlockedAddress).
var (
	ErrBadURL            = errors.New("web: bad URL")
	ErrTooManyRedirects  = errors.New("web: too many redirects")
	ErrUnsupportedType   = errors.New("web: unsupported content type")
	ErrHTTPStatus        = errors.New("web: HTTP error status")
	ErrFetchTimeout      = errors.New("web: fetch timed out")
	errRedirectForbidden = errors.New("web: redirect refused")
)

// FetchResult is one fetched page, converted and bounded.
type FetchResult struct {
	URL         string // after redirects
	Status      int
	ContentType string
	Title       string
	Text        string
	// Bytes is how much of the body was read; BodyTruncated says the body
	// was longer than max_bytes, TextTruncated that the text was cut to
	// max_chars.
	Bytes         int
	BodyTruncated bool
	TextTruncated bool
	// Readable is false for an HTML page readability found no article in.
	Readable bool
	// MaxChars is the bound the text was cut to; Ceiling the configured
	// one (tools.web.fetch.max_chars) no call can exceed.
	MaxChars, Ceiling int
	kind              string
}

// Fetcher fetches pages for web_fetch through the address guard.
type Fetcher struct {
	cfg    FetchConfig
	guard  *Guard
	client *http.Client
	conv   *Converter
	log    *slog.Logger
}

// FetcherOptions are NewFetcher's inputs beyond the config.
type FetcherOptions struct {
	Logger *slog.Logger
	// Resolver overrides DNS (tests pointing names at loopback, as a
	// rebinding attacker would). Nil: the system's.
	Resolver *net.Resolver
}

// NewFetcher builds a fetcher for cfg (defaults applied to zero fields).
func NewFetcher(cfg FetchConfig, o FetcherOptions) (*Fetcher, error) {
	cfg = Config{Fetch: cfg}.withDefaults().Fetch
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g, err := NewGuard(cfg.AllowHosts, cfg.AllowCIDRs)
	if err != nil {
		return nil, err
	}
	f := &Fetcher{cfg: cfg, guard: g, conv: NewConverter(), log: log}
	tr := &http.Transport{
		// Never a proxy from the environment: the guard must see the
		// address the page really comes from.
		Proxy:                 nil,
		DialContext:           g.DialContext(net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second, Resolver: o.Resolver}),
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout.D(),
		MaxIdleConns:          8,
		IdleConnTimeout:       60 * time.Second,
	}
	f.client = &http.Client{Transport: tr, Timeout: cfg.Timeout.D(), CheckRedirect: f.checkRedirect}
	return f, nil
}

// Close drops idle connections.
func (f *Fetcher) Close() { f.client.CloseIdleConnections() }

func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.cfg.MaxRedirects {
		return fmt.Errorf("%w: more than %d (tools.web.fetch.max_redirects)", ErrTooManyRedirects, f.cfg.MaxRedirects)
	}
	if err := f.checkURL(req.URL); err != nil {
		return fmt.Errorf("%w to %s: %w", errRedirectForbidden, req.URL.Redacted(), err)
	}
	return nil
}

// checkURL refuses what no fetch may ask for: another scheme, no host, a
// host name or literal address the guard refuses. Names are checked again
// after resolution, at dial time.
func (f *Fetcher) checkURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q (only http and https)", ErrBadURL, u.Scheme)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("%w: no host", ErrBadURL)
	}
	return f.guard.CheckHost(u.Hostname())
}

// The content families web_fetch hands to the model.
const (
	kindHTML = "html"
	kindText = "text"
	kindJSON = "json"
)

func kindOf(mediaType string) string {
	switch {
	case mediaType == "text/html" || mediaType == "application/xhtml+xml":
		return kindHTML
	case mediaType == "application/json" || strings.HasSuffix(mediaType, "+json"):
		return kindJSON
	case mediaType == "text/plain" || mediaType == "text/markdown" || mediaType == "text/csv" || mediaType == "text/x-markdown":
		return kindText
	case mediaType == "application/xml" || mediaType == "text/xml" || strings.HasSuffix(mediaType, "+xml"):
		// Feeds (RSS, Atom) are what a personal agent reads most after
		// pages; they are text the model reads well as it is.
		return kindText
	}
	return ""
}

// Fetch gets rawURL and converts it: HTML to readable markdown, text and
// JSON as they are, anything else refused. maxChars (0: the config's)
// bounds the text.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, maxChars int) (FetchResult, error) {
	if maxChars <= 0 || maxChars > f.cfg.MaxChars {
		maxChars = f.cfg.MaxChars
	}
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return FetchResult{}, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	if err := f.checkURL(u); err != nil {
		return FetchResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout.D())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return FetchResult{}, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.1")
	start := time.Now()
	resp, err := f.client.Do(req)
	if err != nil {
		return FetchResult{}, f.fetchError(u, err)
	}
	defer resp.Body.Close()
	res := FetchResult{URL: resp.Request.URL.String(), Status: resp.StatusCode}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return res, fmt.Errorf("%w: %s answered %s", ErrHTTPStatus, res.URL, resp.Status)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(f.cfg.MaxBytes)+1))
	if err != nil {
		return res, f.fetchError(u, err)
	}
	if len(body) > f.cfg.MaxBytes {
		body, res.BodyTruncated = body[:f.cfg.MaxBytes], true
	}
	res.Bytes = len(body)
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = http.DetectContentType(body)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return res, fmt.Errorf("%w: %q from %s", ErrUnsupportedType, ct, res.URL)
	}
	res.ContentType, res.MaxChars, res.Ceiling = mt, maxChars, f.cfg.MaxChars
	kind := kindOf(mt)
	res.kind = kind
	if kind == "" {
		return res, fmt.Errorf("%w: %s is %s; web_fetch reads HTML, plain text, XML feeds and JSON only", ErrUnsupportedType, res.URL, mt)
	}
	text, err := decodeCharset(body, ct, kind)
	if err != nil {
		return res, err
	}
	switch kind {
	case kindHTML:
		page, err := f.conv.Convert(ctx, []byte(text), resp.Request.URL)
		if err != nil {
			return res, err
		}
		res.Title, res.Text, res.Readable = page.Title, page.Markdown, page.Readable
	case kindJSON:
		var buf bytes.Buffer
		// Indented JSON is easier for the model to read; a body cut by
		// max_bytes is not valid JSON and goes through as it is.
		if json.Indent(&buf, []byte(text), "", "  ") == nil {
			text = buf.String()
		}
		res.Text = text
	default:
		res.Text = text
	}
	res.Text, res.TextTruncated = truncate(res.Text, maxChars)
	f.log.Debug("web_fetch", "url", res.URL, "status", res.Status, "type", mt, "bytes", res.Bytes,
		"chars", len(res.Text), "truncated", res.BodyTruncated || res.TextTruncated, "took", time.Since(start).Round(time.Millisecond))
	return res, nil
}

// fetchError makes a transport failure say what happened: a refusal of
// the guard (dial time or redirect), a timeout, or the network error.
func (f *Fetcher) fetchError(u *url.URL, err error) error {
	var be *BlockedError
	switch {
	case errors.Is(err, ErrTooManyRedirects), errors.Is(err, errRedirectForbidden):
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}
		return err
	case errors.As(err, &be):
		return fmt.Errorf("web_fetch %s: %w", u.Redacted(), be)
	case errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return fmt.Errorf("%w: %s after %s (tools.web.fetch.timeout)", ErrFetchTimeout, u.Redacted(), f.cfg.Timeout.D())
	}
	return fmt.Errorf("web_fetch %s: %w", u.Redacted(), err)
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// decodeCharset turns body into UTF-8 text by its declared (or, for HTML,
// sniffed) charset; JSON is UTF-8 by definition.
func decodeCharset(body []byte, contentType, kind string) (string, error) {
	if kind == kindJSON || utf8.Valid(body) && !strings.Contains(strings.ToLower(contentType), "charset=") {
		return strings.ToValidUTF8(string(body), "\uFFFD"), nil
	}
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD"), nil
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("web: decode charset: %w", err)
	}
	return strings.ToValidUTF8(string(out), "\uFFFD"), nil
}

// truncate cuts s to at most n characters (runes), on a rune boundary.
func truncate(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i], true
		}
		count++
	}
	return s, false
}

// render is web_fetch's result text: a header the model can cite, then the
// content wrapped as untrusted.
func (r FetchResult) render(id string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nContent-Type: %s\n", oneLine(r.URL), r.ContentType)
	if r.Title != "" {
		fmt.Fprintf(&b, "Title: %s\n", oneLine(r.Title))
	}
	if r.BodyTruncated {
		fmt.Fprintf(&b, "Note: the page is larger than the %d bytes read (tools.web.fetch.max_bytes); what follows is its beginning.\n", r.Bytes)
	}
	switch {
	case r.TextTruncated && r.MaxChars < r.Ceiling:
		fmt.Fprintf(&b, "Note: the text was cut to %d characters; call again with a larger max_chars (up to %d) for more.\n", r.MaxChars, r.Ceiling)
	case r.TextTruncated:
		fmt.Fprintf(&b, "Note: the text was cut to %d characters, the most web_fetch returns (tools.web.fetch.max_chars).\n", r.MaxChars)
	}
	if r.kind == kindHTML && !r.Readable {
		b.WriteString("Note: no article found; this is the whole page converted.\n")
	}
	b.WriteString(Untrusted(r.URL, r.Text, id))
	return b.String()
}
