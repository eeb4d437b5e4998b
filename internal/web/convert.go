package web

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
)

// Page is an HTML page made readable.
type Page struct {
	Title    string
	Byline   string
	Markdown string
	// Readable is false when readability found no article and the whole
	// page was converted (boilerplate included).
	Readable bool
}

// Converter turns HTML into readable markdown: readability
// (go-readability, a port of Firefox's Reader View) picks the article out
// of the page's navigation, ads and footers, and html-to-markdown renders
// it. It is safe for concurrent use.
type Converter struct {
	md *converter.Converter
}

// NewConverter builds the converter (commonmark, tables, strikethrough).
func NewConverter() *Converter {
	return &Converter{md: converter.NewConverter(converter.WithPlugins(
		base.NewBasePlugin(), commonmark.NewCommonmarkPlugin(), table.NewTablePlugin(), strikethrough.NewStrikethroughPlugin(),
	))}
}

// Convert makes body, the HTML of pageURL, readable.
func (c *Converter) Convert(ctx context.Context, body []byte, pageURL *url.URL) (Page, error) {
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		return Page{}, fmt.Errorf("web: parse HTML: %w", err)
	}
	parser := readability.NewParser()
	// Readability works on doc in place (no clone of a large page); the
	// rare page it finds nothing in is parsed again for the fallback.
	art, rerr := parser.ParseAndMutate(doc, pageURL)
	p := Page{Title: strings.TrimSpace(art.Title()), Byline: strings.TrimSpace(art.Byline())}
	node := art.Node
	if rerr == nil && node != nil {
		p.Readable = true
	} else {
		if doc, err = html.Parse(bytes.NewReader(body)); err != nil {
			return Page{}, fmt.Errorf("web: parse HTML: %w", err)
		}
		node = doc
	}
	md, err := c.md.ConvertNode(node, converter.WithContext(ctx), converter.WithDomain(pageURL.Scheme+"://"+pageURL.Host))
	if err != nil {
		return Page{}, fmt.Errorf("web: convert HTML to markdown: %w", err)
	}
	p.Markdown = strings.TrimSpace(string(md))
	if p.Title == "" {
		p.Title = titleOf(doc)
	}
	return p, nil
}

// titleOf is the document's <title>, for pages readability gave up on.
func titleOf(n *html.Node) string {
	if n.Type == html.ElementNode && n.Data == "title" && n.FirstChild != nil {
		return strings.TrimSpace(n.FirstChild.Data)
	}
	if n.Type == html.ElementNode && n.Data == "body" {
		return ""
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := titleOf(c); t != "" {
			return t
		}
	}
	return ""
}
