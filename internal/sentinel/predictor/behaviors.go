package predictor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/jsonl"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/statefile"
	"github.com/raven-agent/raven/internal/strictjson"
)

// BehaviorsSection is the state store section holding the extractor's
// high-water mark, shared by every process on the data dir.
const BehaviorsSection = "behaviors"

// RecordBehaviorsTool is the tool the extractor's model call must use.
const RecordBehaviorsTool = "record_behaviors"

// BehaviorKinds are the event kinds the model may record.
var BehaviorKinds = []string{"activity", "plan", "habit", "preference", "mood", "commitment"}

// Message is one conversation message the extractor reads.
type Message struct {
	At           time.Time
	Conversation string
	Role         string // "user" (the owner) or "assistant"
	Content      string
}

// MessagesFunc returns up to limit messages written after since, oldest
// first (session.Store.Since, adapted).
type MessagesFunc func(ctx context.Context, since time.Time, limit int) ([]Message, error)

// BehaviorEvent is one structured behaviour event, one line of behaviors.md.
type BehaviorEvent struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"`
	Summary    string    `json:"summary"`
	Confidence float64   `json:"confidence"`
}

// Line renders e in the one-line form behaviors.md keeps and the
// assembler's FoldBehaviors reads back as one event.
func (e BehaviorEvent) Line() string {
	return fmt.Sprintf("- %s [%s] %s (confidence %.2f)\n", e.Time.UTC().Format(time.RFC3339), e.Kind, e.Summary, e.Confidence)
}

// BehaviorsState is the shared "behaviors" section of the state store.
type BehaviorsState struct {
	// HighWater: messages at or before it have been extracted.
	HighWater time.Time `json:"high_water,omitzero"`
	// LastRun is when a process last claimed a run; at most one run per
	// interval across processes.
	LastRun    time.Time `json:"last_run,omitzero"`
	LastEvents int       `json:"last_events"`
	LastError  string    `json:"last_error,omitempty"`
}

// BehaviorsOptions configure the extractor.
type BehaviorsOptions struct {
	Path     string           // user_memory/behaviors.md
	Store    *statefile.Store // shared state store (section "behaviors")
	Provider llm.Provider     // nil: the extractor never runs
	Model    string
	Messages MessagesFunc
	// LastOwnerActivity is when the owner last wrote anywhere (zero: never).
	// Nil disables the idle gate.
	LastOwnerActivity func(ctx context.Context) (time.Time, error)

	Idle     time.Duration // owner idle at least this long (default 30m)
	Interval time.Duration // at most one run per interval (default 6h)
	// Lookback bounds how far back the first run reads (default 48h).
	Lookback time.Duration
	// MaxMessages per run (default 200), MaxPromptBytes of rendered
	// messages (default 24 KiB), MaxEvents kept per run (default 20).
	MaxMessages    int
	MaxPromptBytes int
	MaxEvents      int
	// MinConfidence: weaker events are not recorded (default 0.5).
	MinConfidence float64

	Clock  clock.Clock
	Logger *slog.Logger
}

// Extractor defaults.
const (
	DefaultBehaviorsIdle     = 30 * time.Minute
	DefaultBehaviorsInterval = 6 * time.Hour
	DefaultBehaviorsLookback = 48 * time.Hour
	DefaultMaxMessages       = 200
	DefaultMaxPromptBytes    = 24 << 10
	DefaultMaxEvents         = 20
	DefaultMinConfidence     = 0.5

	behaviorsMaxTokens = 1024
	messageMax         = 600
	summaryMax         = 200
	behaviorsHeader    = "# Behaviors\n\n<!-- Appended by Raven's behaviors extractor: one line per event. Safe to edit. -->\n"
)

// Skip reasons of an ExtractResult.
const (
	SkipNoModel     = "no_model"
	SkipInterval    = "interval"
	SkipOwnerActive = "owner_active"
	SkipNoMessages  = "no_messages"
	SkipFailed      = "failed"
)

// ExtractResult reports one MaybeRun.
type ExtractResult struct {
	Ran      bool            `json:"ran"`
	Skipped  string          `json:"skipped,omitempty"`
	Messages int             `json:"messages"`
	Events   []BehaviorEvent `json:"events,omitempty"`
	Err      string          `json:"error,omitempty"`
}

// BehaviorsExtractor turns the owner's recent conversation into behaviour
// events with one model call, when the owner is idle and at most once per
// interval, and appends them to behaviors.md.
type BehaviorsExtractor struct {
	o   BehaviorsOptions
	clk clock.Clock
	log *slog.Logger

	mu        sync.Mutex // one run at a time in this process
	lastCheck time.Time  // last known LastRun, to skip the lock between runs
}

// NewBehaviorsExtractor validates o and returns an extractor.
func NewBehaviorsExtractor(o BehaviorsOptions) (*BehaviorsExtractor, error) {
	if o.Path == "" || o.Store == nil || o.Messages == nil {
		return nil, errors.New("predictor: behaviors extractor needs a path, a state store and a message source")
	}
	if o.Clock == nil {
		o.Clock = clock.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Idle <= 0 {
		o.Idle = DefaultBehaviorsIdle
	}
	if o.Interval <= 0 {
		o.Interval = DefaultBehaviorsInterval
	}
	if o.Lookback <= 0 {
		o.Lookback = DefaultBehaviorsLookback
	}
	if o.MaxMessages <= 0 {
		o.MaxMessages = DefaultMaxMessages
	}
	if o.MaxPromptBytes <= 0 {
		o.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if o.MaxEvents <= 0 {
		o.MaxEvents = DefaultMaxEvents
	}
	if o.MinConfidence <= 0 {
		o.MinConfidence = DefaultMinConfidence
	}
	return &BehaviorsExtractor{o: o, clk: o.Clock, log: o.Logger.With("component", "behaviors")}, nil
}

// State reads the shared extractor state.
func (e *BehaviorsExtractor) State(ctx context.Context) (BehaviorsState, error) {
	return ReadBehaviorsState(ctx, e.o.Store)
}

// ReadBehaviorsState reads the extractor's section of store, for status
// displays in processes that do not run the extractor.
func ReadBehaviorsState(ctx context.Context, store *statefile.Store) (BehaviorsState, error) {
	var st BehaviorsState
	err := store.View(ctx, func(tx *statefile.Tx) error {
		_, err := tx.Get(BehaviorsSection, &st)
		return err
	})
	return st, err
}

// MaybeRun extracts if the owner is idle and no process ran within the
// interval. It never fails: every problem is a skip with a log line, and
// the high-water mark only moves past messages that were dealt with.
func (e *BehaviorsExtractor) MaybeRun(ctx context.Context) ExtractResult {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.clk.Now()
	if e.o.Provider == nil {
		return ExtractResult{Skipped: SkipNoModel}
	}
	if !e.lastCheck.IsZero() && now.Sub(e.lastCheck) < e.o.Interval {
		return ExtractResult{Skipped: SkipInterval}
	}
	st, err := e.State(ctx)
	if err != nil {
		return e.fail("read state", err)
	}
	if !st.LastRun.IsZero() && now.Sub(st.LastRun) < e.o.Interval {
		e.lastCheck = st.LastRun
		return ExtractResult{Skipped: SkipInterval}
	}
	if e.o.LastOwnerActivity != nil {
		last, err := e.o.LastOwnerActivity(ctx)
		if err != nil {
			return e.fail("owner activity", err)
		}
		if !last.IsZero() && now.Sub(last) < e.o.Idle {
			return ExtractResult{Skipped: SkipOwnerActive}
		}
	}
	claimed := false
	err = e.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		st = BehaviorsState{}
		if _, err := tx.Get(BehaviorsSection, &st); err != nil {
			return err
		}
		if !st.LastRun.IsZero() && now.Sub(st.LastRun) < e.o.Interval {
			return nil // a peer process claimed this interval first
		}
		st.LastRun = now
		claimed = true
		return tx.Put(BehaviorsSection, st)
	})
	if err != nil {
		return e.fail("claim", err)
	}
	e.lastCheck = st.LastRun
	if !claimed {
		return ExtractResult{Skipped: SkipInterval}
	}
	return e.run(ctx, st, now)
}

func (e *BehaviorsExtractor) run(ctx context.Context, st BehaviorsState, now time.Time) ExtractResult {
	since := st.HighWater
	if floor := now.Add(-e.o.Lookback); since.Before(floor) {
		since = floor
	}
	msgs, err := e.o.Messages(ctx, since, e.o.MaxMessages)
	if err != nil {
		return e.failState(ctx, "read messages", err)
	}
	msgs = slices.DeleteFunc(msgs, func(m Message) bool { return !m.At.After(since) || m.At.After(now) })
	prompt, batch := e.render(msgs)
	if len(batch) == 0 {
		e.commit(ctx, time.Time{}, 0, "")
		return ExtractResult{Skipped: SkipNoMessages}
	}
	res := ExtractResult{Ran: true, Messages: len(batch)}
	high := batch[len(batch)-1].At
	events, err := e.extract(ctx, prompt, batch)
	var perr *parseError
	switch {
	case errors.As(err, &perr):
		// The model misread this batch; retrying it forever would stall
		// the mark, so it is passed over.
		e.log.Warn("behaviors: model output rejected; batch skipped", "messages", len(batch), "err", err)
		e.commit(ctx, high, 0, err.Error())
		res.Err = err.Error()
		return res
	case err != nil:
		res = e.failState(ctx, "model call", err)
		res.Messages = len(batch)
		return res
	}
	if err := appendEvents(e.o.Path, events); err != nil {
		res = e.failState(ctx, "append", err)
		res.Messages = len(batch)
		return res
	}
	e.commit(ctx, high, len(events), "")
	res.Events = events
	e.log.Info("behaviors: extracted", "messages", len(batch), "events", len(events), "high_water", high)
	return res
}

// render lays out messages for the model within the prompt budget and
// returns the ones included. A cut batch never ends inside a group of
// messages sharing a timestamp (a turn is stored under one time), so a
// high-water mark on the last included time passes over nothing.
func (e *BehaviorsExtractor) render(msgs []Message) (string, []Message) {
	lines := make([]string, 0, len(msgs))
	size := 0
	for _, m := range msgs {
		who := "owner"
		if m.Role != "user" {
			who = "raven"
		}
		line := fmt.Sprintf("[%s] (%s) %s: %s\n", m.At.UTC().Format(time.RFC3339), m.Conversation, who, shorten(m.Content, messageMax))
		if size+len(line) > e.o.MaxPromptBytes && len(lines) > 0 {
			break
		}
		size += len(line)
		lines = append(lines, line)
	}
	n := len(lines)
	if k := cutPoint(msgs, n, len(msgs) >= e.o.MaxMessages); k > 0 {
		n = k
	}
	return strings.Join(lines[:n], ""), msgs[:n]
}

// cutPoint moves a cut after n messages back to a timestamp boundary. When
// all of msgs are kept but the source's page was full, the messages after
// the page may share the last timestamp, so that group is left for the
// next run. 0 means no boundary exists (one group fills the batch).
func cutPoint(msgs []Message, n int, pageFull bool) int {
	if n == 0 {
		return 0
	}
	if n == len(msgs) && !pageFull {
		return n
	}
	if n < len(msgs) && !msgs[n].At.Equal(msgs[n-1].At) {
		return n
	}
	last := msgs[n-1].At
	k := n
	for k > 0 && msgs[k-1].At.Equal(last) {
		k--
	}
	return k
}

const behaviorsSystemPrompt = `You are Raven's behaviour extractor. From the owner's recent conversation with Raven, record concrete facts about what the owner does, plans, habitually does, prefers or has committed to, and notable changes of mood.
Rules:
- Only the owner's own behaviour; never Raven's actions or suggestions.
- One event per fact, a short third-person summary ("Owner goes to the gym on Thursday evenings").
- time is the RFC 3339 time of the message the fact comes from.
- confidence in [0,1]: how sure the text makes you.
- Record nothing rather than guesses or small talk. Call record_behaviors exactly once.`

// BehaviorsTool is the record_behaviors tool schema.
func BehaviorsTool(maxEvents int) llm.Tool {
	return llm.Tool{
		Name:        RecordBehaviorsTool,
		Description: "Record the owner's behaviour events found in the messages (possibly none).",
		Parameters: map[string]any{
			"type":                 "object",
			"additionalProperties": false,
			"required":             []any{"events"},
			"properties": map[string]any{
				"events": map[string]any{
					"type":     "array",
					"maxItems": maxEvents,
					"items": map[string]any{
						"type":                 "object",
						"additionalProperties": false,
						"required":             []any{"time", "kind", "summary", "confidence"},
						"properties": map[string]any{
							"time":       map[string]any{"type": "string", "description": "RFC 3339 time of the source message"},
							"kind":       map[string]any{"type": "string", "enum": toAny(BehaviorKinds)},
							"summary":    map[string]any{"type": "string", "maxLength": summaryMax},
							"confidence": map[string]any{"type": "number", "minimum": 0, "maximum": 1},
						},
					},
				},
			},
		},
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// parseError is a model answer that does not fit the tool contract.
type parseError struct{ msg string }

func (e *parseError) Error() string { return "behaviors: " + e.msg }

func (e *BehaviorsExtractor) extract(ctx context.Context, prompt string, batch []Message) ([]BehaviorEvent, error) {
	temp := 0.1
	resp, err := e.o.Provider.Chat(llm.WithCallTag(ctx, llm.CallTag{Origin: llm.OriginExtractor}), llm.Request{
		Model: e.o.Model,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: behaviorsSystemPrompt},
			{Role: llm.RoleUser, Content: "Messages (oldest first):\n" + prompt},
		},
		Tools:       []llm.Tool{BehaviorsTool(e.o.MaxEvents)},
		ToolChoice:  llm.ToolChoice(RecordBehaviorsTool),
		MaxTokens:   behaviorsMaxTokens,
		Temperature: &temp,
		NoReasoning: true,
	})
	if err == nil && resp == nil {
		err = errors.New("provider returned no response")
	}
	if err != nil {
		return nil, fmt.Errorf("behaviors: %s: %w", e.o.Provider.Name(), err)
	}
	return ParseBehaviors(resp, batch[0].At, batch[len(batch)-1].At, e.o.MaxEvents, e.o.MinConfidence, e.log)
}

// ParseBehaviors validates the record_behaviors call strictly: unknown
// fields or a malformed payload reject the whole answer; an event with a
// bad kind, time outside [from, to] (a minute's slack) or a missing
// confidence is dropped; weak events are left out; at most maxEvents kept.
func ParseBehaviors(resp *llm.Response, from, to time.Time, maxEvents int, minConfidence float64, log *slog.Logger) ([]BehaviorEvent, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var call *llm.ToolCall
	for i := range resp.ToolCalls {
		if resp.ToolCalls[i].Name == RecordBehaviorsTool {
			call = &resp.ToolCalls[i]
			break
		}
	}
	if call == nil {
		return nil, &parseError{"no " + RecordBehaviorsTool + " call"}
	}
	var args struct {
		Events []struct {
			Time       string   `json:"time"`
			Kind       string   `json:"kind"`
			Summary    string   `json:"summary"`
			Confidence *float64 `json:"confidence"`
		} `json:"events"`
	}
	if err := strictjson.Decode([]byte(call.Arguments), &args); err != nil {
		return nil, &parseError{"arguments: " + err.Error()}
	}
	if args.Events == nil {
		return nil, &parseError{"arguments: events missing"}
	}
	if len(args.Events) > maxEvents {
		log.Info("behaviors: model returned too many events; keeping the first", "got", len(args.Events), "max", maxEvents)
		args.Events = args.Events[:maxEvents]
	}
	lo, hi := from.Add(-time.Minute), to.Add(time.Minute)
	var out []BehaviorEvent
	for i, a := range args.Events {
		drop := func(why string) { log.Info("behaviors: event dropped", "index", i, "why", why) }
		at, err := time.Parse(time.RFC3339, strings.TrimSpace(a.Time))
		switch {
		case err != nil:
			drop("time is not RFC 3339")
			continue
		case at.Before(lo) || at.After(hi):
			drop("time outside the messages")
			continue
		case !slices.Contains(BehaviorKinds, a.Kind):
			drop("unknown kind " + a.Kind)
			continue
		case a.Confidence == nil || *a.Confidence < 0 || *a.Confidence > 1:
			drop("confidence missing or outside [0,1]")
			continue
		}
		summary := shorten(a.Summary, summaryMax)
		if summary == "" {
			drop("empty summary")
			continue
		}
		if *a.Confidence < minConfidence {
			continue
		}
		out = append(out, BehaviorEvent{Time: at.UTC(), Kind: a.Kind, Summary: summary, Confidence: *a.Confidence})
	}
	return out, nil
}

// appendEvents appends one line per event with the line-log appender
// (jsonl.AppendLines): a single write under O_APPEND, so a concurrent
// writer's lines never interleave with ours, on a fresh line when the
// owner's last edit left none; synced before the high-water mark moves
// past them.
func appendEvents(path string, events []BehaviorEvent) error {
	lines := make([][]byte, len(events))
	for i, ev := range events {
		lines[i] = []byte(strings.TrimSuffix(ev.Line(), "\n"))
	}
	if err := jsonl.AppendLines(path, lines, jsonl.AppendOptions{Header: []byte(behaviorsHeader), Sync: true}); err != nil {
		return fmt.Errorf("behaviors: %w", err)
	}
	return nil
}

// commit records the outcome of a claimed run.
func (e *BehaviorsExtractor) commit(ctx context.Context, high time.Time, events int, errText string) {
	err := e.o.Store.Update(ctx, func(tx *statefile.Tx) error {
		var st BehaviorsState
		if _, err := tx.Get(BehaviorsSection, &st); err != nil {
			return err
		}
		if high.After(st.HighWater) {
			st.HighWater = high
		}
		st.LastEvents, st.LastError = events, errText
		return tx.Put(BehaviorsSection, st)
	})
	if err != nil {
		e.log.Warn("behaviors: state not saved; the batch may be extracted again", "err", err)
	}
}

func (e *BehaviorsExtractor) fail(step string, err error) ExtractResult {
	e.log.Warn("behaviors: extraction skipped", "step", step, "err", err)
	return ExtractResult{Skipped: SkipFailed, Err: fmt.Sprintf("%s: %v", step, err)}
}

// failState is fail after a claim: the mark stays, the error is recorded.
func (e *BehaviorsExtractor) failState(ctx context.Context, step string, err error) ExtractResult {
	res := e.fail(step, err)
	e.commit(ctx, time.Time{}, 0, res.Err)
	return res
}
