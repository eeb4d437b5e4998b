package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/raven-agent/raven/internal/llm"
)

// RegistryOptions configure a Registry; zero values take the defaults.
type RegistryOptions struct {
	// SearchThreshold is tools.search_threshold: with more tools than
	// this, the external ones are reached through tool_search.
	SearchThreshold int
}

// Registry holds the tools offered to the model and is the one place a
// call's arguments are validated.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
	// external names the tools that come from outside Raven (MCP servers):
	// past the threshold they are reached through tool_search instead of
	// being offered on every call.
	external  map[string]bool
	threshold int
	// schemas caches each tool's resolved schema (or why it does not
	// resolve), filled on first use, dropped when the tool is replaced.
	schemas map[string]schemaEntry
	gen     uint64 // bumped by every change of tools
	search  *Typed[searchArgs]
	index   *searchIndex // over the external tools; nil after a change
}

type schemaEntry struct {
	rs  *jsonschema.Resolved
	err error
}

// NewRegistry returns a registry with the default options holding ts.
func NewRegistry(ts ...Tool) *Registry {
	return NewRegistryWith(RegistryOptions{}, ts...)
}

// NewRegistryWith returns a registry configured by o holding ts.
func NewRegistryWith(o RegistryOptions, ts ...Tool) *Registry {
	if o.SearchThreshold <= 0 {
		o.SearchThreshold = DefaultSearchThreshold
	}
	r := &Registry{tools: make(map[string]Tool), external: make(map[string]bool),
		schemas: make(map[string]schemaEntry), threshold: o.SearchThreshold}
	r.search = newSearchTool(r)
	for _, t := range ts {
		r.Register(t)
	}
	return r
}

// SetSearchThreshold applies a reloaded tools.search_threshold (<= 0: the
// default).
func (r *Registry) SetSearchThreshold(n int) {
	if n <= 0 {
		n = DefaultSearchThreshold
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.threshold = n
}

// Register adds or replaces t.
func (r *Registry) Register(t Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.put(t, false)
}

// RegisterExternal adds or replaces t, a tool from outside Raven (an MCP
// server's). Its schema is resolved on its first call; one that does not
// resolve makes that tool's calls fail with ErrBadSchema.
func (r *Registry) RegisterExternal(t Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.put(t, true)
}

func (r *Registry) put(t Tool, external bool) {
	name := t.Name()
	r.gen++
	if r.external[name] || external {
		r.index = nil
	}
	r.tools[name] = t
	delete(r.schemas, name)
	if external {
		r.external[name] = true
	} else {
		delete(r.external, name)
	}
}

// Unregister removes the tool called name, if any: a live config reload
// that turns a tool off.
func (r *Registry) Unregister(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	if r.external[name] {
		r.index = nil
	}
	delete(r.tools, name)
	delete(r.external, name)
	delete(r.schemas, name)
}

// IsExternal reports whether name was registered with RegisterExternal.
func (r *Registry) IsExternal(name string) bool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.external[name]
}

// Get returns the tool called name. tool_search is found even when it is
// not offered, so a call to it always runs.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.lookup(name)
}

// lookup is Get with r.mu held.
func (r *Registry) lookup(name string) (Tool, bool) {
	t, ok := r.tools[name]
	if !ok && name == ToolSearchName {
		return r.search, true
	}
	return t, ok
}

// Defs describes every registered tool, sorted by name so prompts are
// stable: the full catalogue (the Sentinel's menu), not what one model step
// is offered (see Offered).
func (r *Registry) Defs() []llm.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]llm.Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, def(t))
	}
	sortDefs(out)
	return out
}

// Offered describes the tools one model step sees. Up to the threshold that
// is every tool. Past it, the external tools are left out except those
// tool_search brought into act (nil: none), and tool_search is offered in
// their place; Raven's own tools are always offered.
func (r *Registry) Offered(act *Activation) []llm.Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if !r.searching() {
		out := make([]llm.Tool, 0, len(r.tools))
		for _, t := range r.tools {
			out = append(out, def(t))
		}
		sortDefs(out)
		return out
	}
	out := make([]llm.Tool, 0, len(r.tools)-len(r.external)+act.Len()+1)
	hidden := 0
	for name, t := range r.tools {
		if r.external[name] && !act.Has(name) {
			hidden++
			continue
		}
		out = append(out, def(t))
	}
	if _, shadowed := r.tools[ToolSearchName]; !shadowed {
		d := def(r.search)
		d.Description = searchDescription(hidden, r.namespaces())
		out = append(out, d)
	}
	sortDefs(out)
	return out
}

// searching reports whether external tools go through tool_search; r.mu
// is held.
func (r *Registry) searching() bool {
	return len(r.external) > 0 && len(r.tools) > r.threshold
}

func def(t Tool) llm.Tool {
	return llm.Tool{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()}
}

func sortDefs(ds []llm.Tool) {
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
}

// CheckArgs validates args for the tool called name exactly as Run does,
// without running it: the Sentinel checks a proposed pick with it.
func (r *Registry) CheckArgs(name string, args json.RawMessage) error {
	_, rs, err := r.resolve(name)
	if err != nil {
		return err
	}
	return checkArgs(name, rs, args)
}

// resolve finds the tool and its resolved schema, resolving it once.
func (r *Registry) resolve(name string) (Tool, *jsonschema.Resolved, error) {
	r.mu.RLock()
	t, ok := r.lookup(name)
	e, cached := r.schemas[name]
	gen := r.gen
	r.mu.RUnlock()
	if !ok {
		return nil, nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	if !cached {
		if typed, ok := t.(interface{ resolvedSchema() *jsonschema.Resolved }); ok {
			e.rs = typed.resolvedSchema()
		} else {
			e.rs, e.err = resolveParams(t.Parameters())
		}
		r.mu.Lock()
		if r.gen == gen {
			r.schemas[name] = e // not if a tool changed meanwhile
		}
		r.mu.Unlock()
	}
	if e.err != nil {
		return nil, nil, fmt.Errorf("%s: %w: %v", name, ErrBadSchema, e.err)
	}
	return t, e.rs, nil
}

// Run validates a model's tool call against the tool's schema and runs it.
// Every failure comes back as an error meant for the model to read and
// correct; none of them ends the turn.
func (r *Registry) Run(ctx context.Context, call llm.ToolCall) (string, error) {
	t, rs, err := r.resolve(call.Name)
	if err != nil {
		return "", err
	}
	raw := json.RawMessage(call.Arguments)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	if err := checkArgs(call.Name, rs, raw); err != nil {
		return "", err
	}
	return t.Run(ctx, raw)
}
