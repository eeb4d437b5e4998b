package tools

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// ToolSearchName is the name of the tool that stands in for the external
// tools past the threshold.
const ToolSearchName = "tool_search"

// Limits of one tool_search call.
const (
	defaultSearchLimit = 5
	maxSearchLimit     = 20
	maxSearchQuery     = 500
	// maxIndexedDesc bounds how much of a description is indexed: an MCP
	// server's description can be a manual.
	maxIndexedDesc = 2000
)

// Activation is the set of external tools tool_search brought into one
// turn; the agent loop makes one per turn and offers its tools from the
// next model step on. Safe for concurrent use; a nil *Activation is empty.
type Activation struct {
	mu    sync.Mutex
	names map[string]bool
}

// NewActivation returns an empty set.
func NewActivation() *Activation { return &Activation{names: make(map[string]bool)} }

type activationKey struct{}

// WithActivation returns ctx carrying act, where tool_search adds to it.
func WithActivation(ctx context.Context, act *Activation) context.Context {
	return context.WithValue(ctx, activationKey{}, act)
}

// ActivationFrom returns the turn's set, if any.
func ActivationFrom(ctx context.Context) (*Activation, bool) {
	a, ok := ctx.Value(activationKey{}).(*Activation)
	return a, ok && a != nil
}

// Add brings names into the set.
func (a *Activation) Add(names ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, n := range names {
		a.names[n] = true
	}
}

// Has reports whether name was brought in.
func (a *Activation) Has(name string) bool {
	if a == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.names[name]
}

// Len is how many tools were brought in; it only grows, so a caller can
// tell the set changed since it last looked.
func (a *Activation) Len() int {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.names)
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"a few keywords: what the tool should do, or part of its name"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many tools to bring in (default 5)"`
}

func newSearchTool(r *Registry) *Typed[searchArgs] {
	return Must(New(ToolSearchName, searchDescription(0, nil), func(ctx context.Context, a searchArgs) (string, error) {
		limit := a.Limit
		if limit <= 0 {
			limit = defaultSearchLimit
		}
		found := r.Search(a.Query, limit)
		if len(found) == 0 {
			return fmt.Sprintf("No tool matches %q. Try other keywords (a verb, the thing it acts on, or a server name).", a.Query), nil
		}
		names := make([]string, len(found))
		var b strings.Builder
		act, turn := ActivationFrom(ctx)
		if turn {
			fmt.Fprintf(&b, "%d tools match; they are available to call from your next step:\n", len(found))
		} else {
			fmt.Fprintf(&b, "%d tools match; call them by name:\n", len(found))
		}
		for i, f := range found {
			names[i] = f.Name
			fmt.Fprintf(&b, "- %s: %s\n", f.Name, f.Summary)
		}
		if turn {
			act.Add(names...)
		}
		return strings.TrimRight(b.String(), "\n"), nil
	}, Len("query", 1, maxSearchQuery), Range("limit", 1, maxSearchLimit)))
}

// searchDescription tells the model what tool_search stands in for.
func searchDescription(hidden int, namespaces []string) string {
	var b strings.Builder
	b.WriteString("Find more tools to call. ")
	if hidden > 0 {
		fmt.Fprintf(&b, "%d tools are available but not listed", hidden)
		if len(namespaces) > 0 {
			fmt.Fprintf(&b, " (from: %s)", strings.Join(namespaces, ", "))
		}
		b.WriteString(". ")
	}
	b.WriteString("Search their names and descriptions with a few keywords; the matching tools are added to your next step.")
	return b.String()
}

// namespaces lists the external tools' server prefixes (NAME in
// NAME__tool), at most ten; r.mu is held.
func (r *Registry) namespaces() []string {
	seen := map[string]bool{}
	var out []string
	for name := range r.external {
		if ns, _, ok := strings.Cut(name, "__"); ok && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	if len(out) > 10 {
		out = append(out[:10], "…")
	}
	return out
}

// Found is one tool_search hit.
type Found struct {
	Name    string
	Summary string // the description's first line
	Score   float64
}

// Search ranks the external tools against query and returns the best
// limit, best first.
func (r *Registry) Search(query string, limit int) []Found {
	r.mu.RLock()
	ix := r.index
	r.mu.RUnlock()
	if ix == nil {
		r.mu.Lock()
		if r.index == nil {
			r.index = r.buildIndex()
		}
		ix = r.index
		r.mu.Unlock()
	}
	return ix.search(query, limit)
}

// The ranking is BM25F over two fields, name and description, with the
// name weighted higher (a name is what a tool is; a description also says
// what it is not), plus a bonus that puts an exact name first. BM25 rather
// than plain counts because descriptions vary from five words to a page:
// its length normalisation stops a long description winning on volume, and
// its idf stops a word every server uses ("file", "get") counting as much
// as a rare one. A query word also matches as a prefix at half weight, so
// "calend" finds "calendar".
const (
	bm25K1       = 1.2
	bm25B        = 0.75
	nameWeight   = 3.0
	prefixWeight = 0.5
	minPrefix    = 3
	exactBonus   = 100.0
)

type searchDoc struct {
	name, lower, short, summary string
	length                      float64 // weighted field length
}

type posting struct {
	doc          int32
	inName, inDs uint16
}

type searchIndex struct {
	docs     []searchDoc
	postings map[string][]posting
	vocab    []string // sorted, for prefix matches
	avgLen   float64
}

// buildIndex indexes the external tools; r.mu is held.
func (r *Registry) buildIndex() *searchIndex {
	names := make([]string, 0, len(r.external))
	for n := range r.external {
		names = append(names, n)
	}
	sort.Strings(names)
	ix := &searchIndex{postings: make(map[string][]posting)}
	var total float64
	for i, n := range names {
		t := r.tools[n]
		desc := t.Description()
		summary, _, _ := strings.Cut(strings.TrimSpace(desc), "\n")
		if len(summary) > 200 {
			summary = truncateUTF8(summary, 200) + "…"
		}
		if len(desc) > maxIndexedDesc {
			desc = truncateUTF8(desc, maxIndexedDesc)
		}
		lower := strings.ToLower(n)
		_, short, _ := strings.Cut(lower, "__")
		counts := map[string]*posting{}
		nameToks, descToks := tokens(n), tokens(desc)
		for _, tok := range nameToks {
			p := counts[tok]
			if p == nil {
				p = &posting{doc: int32(i)}
				counts[tok] = p
			}
			p.inName++
		}
		for _, tok := range descToks {
			p := counts[tok]
			if p == nil {
				p = &posting{doc: int32(i)}
				counts[tok] = p
			}
			p.inDs++
		}
		for tok, p := range counts {
			ix.postings[tok] = append(ix.postings[tok], *p)
		}
		l := nameWeight*float64(len(nameToks)) + float64(len(descToks))
		total += l
		ix.docs = append(ix.docs, searchDoc{name: n, lower: lower, short: short, summary: summary, length: l})
	}
	if len(ix.docs) > 0 {
		ix.avgLen = total / float64(len(ix.docs))
	}
	ix.vocab = make([]string, 0, len(ix.postings))
	for tok := range ix.postings {
		ix.vocab = append(ix.vocab, tok)
	}
	sort.Strings(ix.vocab)
	return ix
}

func (ix *searchIndex) search(query string, limit int) []Found {
	if len(ix.docs) == 0 || limit <= 0 {
		return nil
	}
	scores := make([]float64, len(ix.docs))
	n := float64(len(ix.docs))
	add := func(term string, weight float64) {
		ps := ix.postings[term]
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			d := &ix.docs[p.doc]
			tf := nameWeight*float64(p.inName) + float64(p.inDs)
			norm := bm25K1 * (1 - bm25B + bm25B*d.length/ix.avgLen)
			scores[p.doc] += weight * idf * tf * (bm25K1 + 1) / (tf + norm)
		}
	}
	qs := tokens(query)
	slices.Sort(qs)
	for _, q := range slices.Compact(qs) {
		if _, ok := ix.postings[q]; ok {
			add(q, 1)
		}
		if len(q) < minPrefix {
			continue
		}
		for i := sort.SearchStrings(ix.vocab, q); i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], q); i++ {
			if ix.vocab[i] != q {
				add(ix.vocab[i], prefixWeight)
			}
		}
	}
	whole := strings.ToLower(strings.TrimSpace(query))
	for i := range ix.docs {
		if d := &ix.docs[i]; whole != "" && (d.lower == whole || d.short == whole) {
			scores[i] += exactBonus
		}
	}
	hits := make([]int32, 0, 32)
	for i, s := range scores {
		if s > 0 {
			hits = append(hits, int32(i))
		}
	}
	sort.Slice(hits, func(a, b int) bool {
		sa, sb := scores[hits[a]], scores[hits[b]]
		if sa != sb {
			return sa > sb
		}
		return hits[a] < hits[b] // docs are sorted by name
	})
	if len(hits) > limit {
		hits = hits[:limit]
	}
	out := make([]Found, len(hits))
	for i, h := range hits {
		out[i] = Found{Name: ix.docs[h].name, Summary: ix.docs[h].summary, Score: scores[h]}
	}
	return out
}

// tokens splits s into lower-case words at every non-letter-or-digit and
// at camelCase boundaries, a plural s folded: "github__createIssues" is
// github, create, issue. The same folding on both sides is all the stemming
// tool names need ("list_events" for "event").
func tokens(s string) []string {
	var out []string
	start := -1
	prev := rune(0)
	flush := func(end int) {
		if start >= 0 && end > start {
			w := strings.ToLower(s[start:end])
			if len(w) > 3 && w[len(w)-1] == 's' && w[len(w)-2] != 's' {
				w = w[:len(w)-1]
			}
			out = append(out, w)
		}
		start = -1
	}
	for i, c := range s {
		switch {
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			flush(i)
		case start < 0:
			start = i
		case unicode.IsUpper(c) && unicode.IsLower(prev):
			flush(i)
			start = i
		}
		prev = c
	}
	flush(len(s))
	return out
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
