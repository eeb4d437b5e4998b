package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
)

var foundationSection = section{
	name:  "foundation",
	title: "Foundation — a turn with a tool call, an inject, a subagent",
	blurb: "The owner talks to Raven in the terminal (conversation cli:direct). Every turn goes " +
		"through the spine: one serial lane per conversation, with a busy policy for messages " +
		"that arrive while a turn is running.",
	run: runFoundation,
}

const (
	plumberNote = "Plumber: Thursday 10:00.\n"
	gateNote    = "Plumber: Thursday 10:00.\nSide-gate code for him: 4471.\n"
)

func runFoundation(ctx context.Context, e *env) error {
	e.clk.Set(at(0, 8, 0))
	script := llm.NewScripted([]llm.Turn{
		{ToolCalls: []llm.ToolCall{{Name: "write_file", Arguments: jsonArgs(map[string]any{"path": "notes/plumber.md", "content": plumberNote})}}},
		{ToolCalls: []llm.ToolCall{{Name: "write_file", Arguments: jsonArgs(map[string]any{"path": "notes/plumber.md", "content": gateNote})}}},
		{Content: "Saved in notes/plumber.md: the plumber comes Thursday at 10:00, and the side-gate code 4471 is noted for him."},
		// The subagent's turn.
		{Content: "Three plumbers near you open on Thursdays: Fixright (4.8★), PipePro (4.6★), Nguyen & Sons (4.5★)."},
	})
	var inject *spine.Ticket
	var injectErr error
	model := &narrated{inner: script, e: e}
	rt, err := e.newRuntime(ctx, build{model: model})
	if err != nil {
		return err
	}
	if _, err := e.attach(ctx, rt, owner, nil); err != nil {
		return err
	}
	// Stage direction: while the model works on the first call, the owner
	// types a second message into the same conversation.
	model.before = func(n int, _ llm.Request) {
		if n != 1 {
			return
		}
		e.clk.Advance(20 * time.Second)
		busy := rt.Scheduler().HasInflight("cli:direct")
		inject, injectErr = e.say(rt, "cli", "direct", "Oh, and he needs the side-gate code: 4471.", spine.Inject)
		if busy {
			e.emit(Event{Kind: "spine.inject", Label: "spine", Text: "cli:direct is busy → message put in the running turn's mailbox (INJECT)",
				Why: "a person typing mid-turn should be heard by that turn, not wait for a second one"})
		}
	}

	first, err := e.say(rt, "cli", "direct", "Please note that the plumber comes Thursday at 10:00.", spine.Append)
	if err != nil {
		return err
	}
	res, err := e.wait(ctx, "the first turn", first)
	if err != nil {
		return err
	}
	if res.Err != nil {
		return fmt.Errorf("first turn: %w", res.Err)
	}
	if injectErr != nil {
		return injectErr
	}
	if inject == nil {
		return errors.New("the inject was never sent")
	}
	ir, err := e.wait(ctx, "the injected message", inject)
	if err != nil {
		return err
	}
	if !ir.Injected {
		return errors.New("the second message was queued as its own turn instead of being merged")
	}
	e.emit(Event{Kind: "spine.inject_result", Label: "spine", Text: "second message: merged into turn 1, ran no turn of its own",
		Data: map[string]any{"injected": ir.Injected}})
	data, err := os.ReadFile(filepath.Join(rt.Workspace().Root(), "notes", "plumber.md"))
	if err != nil {
		return fmt.Errorf("the note was not written: %w", err)
	}
	e.emit(Event{Kind: "workspace.file", Label: "workspace", Text: "notes/plumber.md: " + quote(strings.ReplaceAll(strings.TrimSpace(string(data)), "\n", " / ")),
		Data: map[string]any{"path": "notes/plumber.md", "content": string(data)}})

	e.clk.Advance(5 * time.Minute)
	id, err := rt.Subagents().Spawn(ctx, "Find three plumbers near the owner who work on Thursdays, with ratings.", "cli", "direct")
	if err != nil {
		return err
	}
	e.emit(Event{Kind: "subagent.spawned", Label: "agent", Text: "spawned subagent " + id + ": “find three plumbers open on Thursdays”",
		Why:  "multi-step work runs as a SUBAGENT turn on its own lane; the owner's conversation stays free",
		Data: map[string]any{"subagent_id": id}})
	m, err := e.expect(ctx, "the subagent's result", func(m spine.Message) bool { return m.Origin == spine.OriginSubagent })
	if err != nil {
		return err
	}
	if !m.Proactive {
		return errors.New("subagent result was not marked proactive")
	}
	return nil
}

func jsonArgs(v map[string]any) string {
	b, _ := json.Marshal(v) // maps of strings and numbers always encode
	return string(b)
}
