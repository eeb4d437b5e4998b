// Package agent is Raven's turn loop: it builds the prompt, calls the model,
// runs tool calls, and applies the origin-gated hook chains around a turn.
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/session"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

// InboundHook sees genuine user input before the model does. When it
// returns handled, its reply is the turn's reply and the model is not called
// (the task-discovery pick consumer works this way).
type InboundHook func(ctx context.Context, req spine.TurnRequest) (handled bool, reply string)

// TurnContext returns one line of read-only context for a turn of
// conversation ("" adds nothing); the owner-questions membership fact is
// one. It is called once per model turn, before the first model call.
type TurnContext func(ctx context.Context, conversation string) string

// OfferedIn is implemented by a tool that is offered to the model only in
// some conversations (conversation_question: only where a question can be
// held). The loop asks it once per turn when building the tool list; the
// tool still re-checks when it runs.
type OfferedIn interface {
	OfferedIn(ctx context.Context, conversation string) bool
}

// ResponseModifier rewrites an outgoing reply; the nudge injector is one. It
// is a plain function so the agent loop never imports the Sentinel.
type ResponseModifier func(sessionKey, content string) string

// The defaults of the agent section (config.json "agent"); New applies
// DefaultMaxIterations, DefaultMaxTokens and DefaultMemoryBytes to zero fields.
const (
	DefaultMaxIterations    = 20
	DefaultHistoryTailBytes = 8 << 10
	DefaultMemoryBytes      = 16 << 10
	DefaultRecentMessages   = 40
	DefaultMaxTokens        = 4096
	DefaultToolTimeout      = 5 * time.Minute
)

// Config tunes the loop.
type Config struct {
	SystemPrompt     string
	MaxIterations    int
	HistoryTailBytes int
	// MemoryBytes is how much of MEMORY.md's head goes into the prompt
	// (0: DefaultMemoryBytes).
	MemoryBytes    int
	RecentMessages int
	MaxTokens      int
	Model          string
	// ToolTimeout bounds one tool call's work (0: no bound).
	ToolTimeout time.Duration
	// Stream shows user-facing replies on Options.Stream while the model
	// writes them.
	Stream bool
}

// Options are the loop's dependencies.
type Options struct {
	// Provider is the model; nil means no model is configured.
	Provider llm.Provider
	Tools    *tools.Registry
	Sessions *session.Store
	// MemoryPath and HistoryPath are MEMORY.md and HISTORY.md.
	MemoryPath  string
	HistoryPath string
	Clock       clock.Clock
	Logger      *slog.Logger
	Config      Config
	// Stream receives the deltas of user-facing replies (the hub); nil
	// streams nothing.
	Stream spine.Streamer
}

// Agent runs turns.
type Agent struct {
	o         Options
	inbound   []InboundHook
	modifiers []ResponseModifier
	contexts  []TurnContext
}

// NoModelReply is the reply to a user turn when no model is configured.
const NoModelReply = "No model is configured, so I can't answer yet. Set one with\n" +
	"  raven config set model ollama/qwen2.5:7b      (local, free; run `ollama serve`)\n" +
	"  raven config set model openai/gpt-4o-mini     (with OPENAI_API_KEY)\n" +
	"  raven config set model anthropic/claude-sonnet-4-5   (with ANTHROPIC_API_KEY)\n" +
	"or pass --model for one run."

// New returns an agent.
func New(o Options) *Agent {
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Tools == nil {
		o.Tools = tools.NewRegistry()
	}
	if o.Config.MaxIterations <= 0 {
		o.Config.MaxIterations = DefaultMaxIterations
	}
	if o.Config.MaxTokens <= 0 {
		o.Config.MaxTokens = DefaultMaxTokens
	}
	if o.Config.MemoryBytes <= 0 {
		o.Config.MemoryBytes = DefaultMemoryBytes
	}
	return &Agent{o: o}
}

// AddInboundHook appends a user-inbound hook.
func (a *Agent) AddInboundHook(h InboundHook) { a.inbound = append(a.inbound, h) }

// AddResponseModifier appends an after-send modifier.
func (a *Agent) AddResponseModifier(m ResponseModifier) { a.modifiers = append(a.modifiers, m) }

// AddTurnContext appends a per-turn context provider; its lines go into
// the system message of every model turn, in the order added.
func (a *Agent) AddTurnContext(c TurnContext) { a.contexts = append(a.contexts, c) }

// Tools returns the registry, for wiring tools that need the agent.
func (a *Agent) Tools() *tools.Registry { return a.o.Tools }

// ExtraUsageOrigin, in a TurnRequest's Extras, names the origin usage
// accounting charges the turn's model calls to instead of the request's.
const ExtraUsageOrigin = "usage_origin"

// ErrMaxIterations is returned when the model keeps calling tools past the cap.
var ErrMaxIterations = errors.New("agent: the model did not finish within the iteration cap")

// RunTurn runs one turn; it is the spine.Handler of the scheduler.
func (a *Agent) RunTurn(ctx context.Context, t *spine.Turn) (string, error) {
	req := t.Request
	conv := req.Conversation()
	log := a.o.Logger.With("conversation", conv, "origin", req.Origin)

	// User-inbound hooks run only for genuine user input: a sentinel or
	// subagent turn is not the owner speaking.
	if req.Origin.UserInbound() {
		for _, h := range a.inbound {
			if handled, reply := h(ctx, req); handled {
				a.persist(ctx, req, []llm.Message{{Role: llm.RoleUser, Content: req.Content}, {Role: llm.RoleAssistant, Content: reply}})
				return reply, nil
			}
		}
	}

	if a.o.Provider == nil {
		if req.Origin.Proactive() {
			return "", llm.ErrNoModel
		}
		a.persist(ctx, req, []llm.Message{{Role: llm.RoleUser, Content: req.Content}, {Role: llm.RoleAssistant, Content: NoModelReply}})
		return NoModelReply, nil
	}

	msgs, err := a.prompt(ctx, conv, req)
	if err != nil {
		return "", err
	}
	a.addTurnContext(ctx, conv, msgs)
	// The tools tool_search brings in are offered from the next step of
	// this turn on.
	act := tools.NewActivation()
	ctx = tools.WithActivation(ctx, act)
	toolDefs, activated := a.offeredTools(ctx, conv, act), 0
	fresh := []llm.Message{{Role: llm.RoleUser, Content: req.Content}}
	msgs = append(msgs, fresh[0])
	fromCron, _ := req.Extras[tools.ExtraFromCron].(bool)
	ctx = tools.WithTurn(ctx, tools.TurnInfo{Origin: req.Origin, Conversation: conv, Channel: req.Channel, ChatID: req.ChatID,
		FromCron: fromCron || req.Origin == spine.OriginCron})

	var reply string
	done := false
	// Usage accounting charges each model call to the turn's origin, or
	// to the ambient source that started it (ExtraUsageOrigin).
	origin, ok := req.Extras[ExtraUsageOrigin].(string)
	if !ok {
		origin = string(req.Origin)
	}
	callCtx := llm.WithCallTag(ctx, llm.CallTag{Origin: origin, Conversation: conv})
	onDelta := a.deltas(ctx, req)
	for i := 0; i < a.o.Config.MaxIterations; i++ {
		// Mid-turn user input: merge what arrived since the last model call.
		for _, inj := range t.Drain() {
			m := llm.Message{Role: llm.RoleUser, Content: inj.Content}
			msgs = append(msgs, m)
			fresh = append(fresh, m)
			log.Info("merged injected message into running turn")
		}
		resp, err := a.o.Provider.Chat(callCtx, llm.Request{
			Model: a.o.Config.Model, Messages: msgs, Tools: toolDefs, MaxTokens: a.o.Config.MaxTokens,
			OnDelta: onDelta,
		})
		if err != nil {
			a.persist(ctx, req, fresh)
			return "", fmt.Errorf("agent: model call: %w", err)
		}
		am := llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls}
		msgs = append(msgs, am)
		fresh = append(fresh, am)
		if len(resp.ToolCalls) == 0 {
			reply, done = resp.Content, true
			break
		}
		if onDelta != nil {
			a.streamToolCalls(ctx, req, resp.ToolCalls)
		}
		for _, call := range resp.ToolCalls {
			out, err := a.runTool(ctx, call)
			if err != nil {
				log.Info("tool call failed", "tool", call.Name, "err", err)
				out = "error: " + err.Error()
			} else {
				log.Debug("tool call", "tool", call.Name)
			}
			tm := llm.Message{Role: llm.RoleTool, Content: out, ToolCallID: call.ID, Name: call.Name}
			msgs = append(msgs, tm)
			fresh = append(fresh, tm)
		}
		if ctx.Err() != nil {
			a.persist(ctx, req, fresh)
			return "", context.Cause(ctx)
		}
		if n := act.Len(); n != activated {
			toolDefs, activated = a.offeredTools(ctx, conv, act), n
		}
	}
	if !done {
		a.persist(ctx, req, fresh)
		return "", ErrMaxIterations
	}
	// After-send modifiers are skipped for system-generated output, so a
	// proactive reply never gets a nudge layered on top of it.
	if !req.Origin.SystemGenerated() {
		for _, m := range a.modifiers {
			reply = m(conv, reply)
		}
		fresh[len(fresh)-1].Content = reply
	}
	a.persist(ctx, req, fresh)
	return reply, nil
}

// addTurnContext appends the providers' lines to the system message.
func (a *Agent) addTurnContext(ctx context.Context, conv string, msgs []llm.Message) {
	var b strings.Builder
	for _, c := range a.contexts {
		if line := strings.TrimSpace(c(ctx, conv)); line != "" {
			b.WriteString("\n\n")
			b.WriteString(line)
		}
	}
	if b.Len() > 0 && len(msgs) > 0 && msgs[0].Role == llm.RoleSystem {
		msgs[0].Content += b.String()
	}
}

// offeredTools is the registry's tool list for one step (see
// tools.Registry.Offered) without the tools that decline this conversation.
func (a *Agent) offeredTools(ctx context.Context, conv string, act *tools.Activation) []llm.Tool {
	defs := a.o.Tools.Offered(act)
	out := defs[:0]
	for _, d := range defs {
		if t, ok := a.o.Tools.Get(d.Name); ok {
			if o, ok := t.(OfferedIn); ok && !o.OfferedIn(ctx, conv) {
				continue
			}
		}
		out = append(out, d)
	}
	return out
}

// runTool runs one call under the per-tool work timeout, except for tools
// that mostly wait for the owner (ask_user has its own answer budget).
func (a *Agent) runTool(ctx context.Context, call llm.ToolCall) (string, error) {
	if d := a.o.Config.ToolTimeout; d > 0 {
		if t, ok := a.o.Tools.Get(call.Name); !ok || !waitsForOwner(t) {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, d)
			defer cancel()
		}
	}
	out, err := a.o.Tools.Run(ctx, call)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, fmt.Errorf("%s did not finish within %s: %w", call.Name, a.o.Config.ToolTimeout, err)
	}
	return out, err
}

func waitsForOwner(t tools.Tool) bool {
	w, ok := t.(tools.WaitsForOwner)
	return ok && w.WaitsForOwner()
}

func (a *Agent) prompt(ctx context.Context, conv string, req spine.TurnRequest) ([]llm.Message, error) {
	mem, hist := a.budgetedMemory()
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: buildSystem(a.o.Config.SystemPrompt, a.o.Clock.Now(), mem, hist)}}
	if a.o.Sessions != nil {
		recent, err := a.o.Sessions.Recent(ctx, conv, a.o.Config.RecentMessages)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, recent...)
	}
	return msgs, nil
}

// persist stores the turn's new messages and one history line per side.
func (a *Agent) persist(ctx context.Context, req spine.TurnRequest, msgs []llm.Message) {
	conv := req.Conversation()
	now := a.o.Clock.Now()
	if a.o.Sessions != nil {
		entries := make([]session.Entry, len(msgs))
		for i, m := range msgs {
			entries[i] = session.Entry{Message: m, Conversation: conv, Channel: req.Channel, ChatID: req.ChatID, Origin: string(req.Origin), At: now}
		}
		if err := a.o.Sessions.Append(context.WithoutCancel(ctx), entries...); err != nil {
			a.o.Logger.Error("session not saved", "conversation", conv, "err", err)
		}
	}
	if a.o.HistoryPath == "" {
		return
	}
	for _, m := range msgs {
		if (m.Role != llm.RoleUser && m.Role != llm.RoleAssistant) || strings.TrimSpace(m.Content) == "" {
			continue
		}
		role := string(m.Role)
		if m.Role == llm.RoleUser && req.Origin != spine.OriginUser {
			role = string(req.Origin)
		}
		if err := memory.AppendHistory(a.o.HistoryPath, now, conv, role, m.Content); err != nil {
			a.o.Logger.Warn("history not appended", "err", err)
		}
	}
}
