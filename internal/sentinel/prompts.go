package sentinel

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/sentinel/policy"
	"github.com/raven-agent/raven/internal/sentinel/textcut"
)

// PlannerToolName is the one tool the planner must call.
const PlannerToolName = "planner_decision"

// SystemPrompt is the planner's identity, the five actions, and the bias
// towards skip: an unwanted nudge costs the owner more than a missed one.
const SystemPrompt = `You are the Sentinel of Raven, a personal AI agent. Every tick you decide whether Raven should reach out to its owner on its own, and how. You never talk to the owner directly: you call the planner_decision tool exactly once.

Actions:
- skip: nothing clearly worth the owner's attention right now. This is the default.
- nudge: send a short standalone message now (a reminder, a heads-up). Needs nudge_message.
- nudge_inject: the owner is mid-conversation; append the message to Raven's next reply in target_session instead of interrupting. Needs nudge_message and target_session.
- nudge_defer: the owner is busy in a thread; wait until it settles, then send. Needs nudge_message and defer_condition (what "settled" means).
- spawn_agent: a multi-step background task would genuinely help (a digest, a status check). Needs spawn_task, a self-contained instruction.

Rules:
- Default to skip unless reaching out is clearly worthwhile, timely and not something the owner already handled (read the recent history).
- Never repeat the last decision or a topic in fire_history the owner recently dismissed.
- Respect the policy state: in quiet hours or with no quota left, only a high-priority deadline may justify anything.
- A low multiplier means the owner has been ignoring nudges: raise your bar.
- Use priority high only for hard deadlines with real consequences.
- Keep nudge_message to one or two friendly sentences, in the owner's language.
- proactivity_score is your confidence (0 to 1) that reaching out now is welcome.`

// PlannerTool is the planner_decision tool. Only action, reason and
// proactivity_score are required by the schema; the planner enforces the
// conditionally required fields itself.
func PlannerTool() llm.Tool {
	actions := make([]any, len(Actions))
	for i, a := range Actions {
		actions[i] = string(a)
	}
	str := func(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }
	return llm.Tool{
		Name:        PlannerToolName,
		Description: "Record the Sentinel's decision for this tick.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"action":            map[string]any{"type": "string", "enum": actions, "description": "what to do this tick"},
				"reason":            str("one sentence: why"),
				"priority":          map[string]any{"type": "string", "enum": []any{"low", "medium", "high"}},
				"proactivity_score": map[string]any{"type": "number", "minimum": 0, "maximum": 1, "description": "confidence that reaching out now is welcome"},
				"target_session":    str(`"channel:chat_id" of the session to reach; empty for the most recent`),
				"nudge_message":     str("the message for nudge, nudge_inject and nudge_defer"),
				"spawn_task":        str("the self-contained task for spawn_agent"),
				"defer_condition":   str("for nudge_defer: what settled means"),
				"topic":             str("optional short topic tag, e.g. tax-return"),
				"slot_id":           str("when the decision covers a planned deadline reminder listed as due now: its [id]"),
			},
			"required": []any{"action", "reason", "proactivity_score"},
		},
	}
}

// RenderContext renders the planner context to the markdown user prompt.
// Sections with nothing to say are omitted rather than left empty, so the
// prompt stays short on quiet days.
func RenderContext(pc PlannerContext) string {
	var b strings.Builder
	b.Grow(len(pc.MemoryMD) + len(pc.HistoryMDRecent) + len(pc.AttentionMD) + len(pc.BehaviorsRecent) + 1024)
	now := pc.Now
	fmt.Fprintf(&b, "# Now\n%s (%s)\n", now.Format("2006-01-02 15:04 MST"), now.Weekday())

	ps := pc.NudgePolicyState
	b.WriteString("\n# Nudge policy\n")
	if ps.Now.IsZero() {
		b.WriteString("unknown (assume strict)\n")
	} else {
		fmt.Fprintf(&b, "- in quiet hours: %t", ps.InQuietHours)
		if ps.QuietHours != "" {
			fmt.Fprintf(&b, " (quiet hours %s)", ps.QuietHours)
		}
		fmt.Fprintf(&b, "\n- nudges left today: %d, this hour: %d, spawns left today: %d\n", ps.DayLeft, ps.HourLeft, ps.SpawnDayLeft)
		fmt.Fprintf(&b, "- engagement multiplier: %.2f (1 = baseline; lower = owner ignores nudges)\n", ps.Multiplier)
		if ps.InDND {
			b.WriteString("- do-not-disturb window now\n")
		}
		if ps.Weekend {
			b.WriteString("- weekend: yes (be sparing)\n")
		}
		if !ps.DismissalCooldownUntil.IsZero() {
			b.WriteString("- the owner recently dismissed a nudge\n")
		}
	}

	if d := pc.LastDecision; d != nil {
		fmt.Fprintf(&b, "\n# Last decision\n%s at %s: %s", d.Action, d.At.Format("15:04"), d.Reason)
		if d.NudgeMessage != "" {
			fmt.Fprintf(&b, " — message: %q", d.NudgeMessage)
		}
		b.WriteByte('\n')
	}

	if len(pc.DueDeadlines) > 0 {
		b.WriteString("\n# Planned deadline reminders due now (judge from history whether still needed; set slot_id to the [id] you act on)\n")
		for _, s := range pc.DueDeadlines {
			fmt.Fprintf(&b, "- [%s] %s (priority %s, until %s)\n", s.ID, s.Message, orLow(s.Priority), s.End.Format("15:04"))
		}
	}

	if len(pc.FireHistory) > 0 {
		b.WriteString("\n# Recently fired topics\n")
		for _, f := range policy.TopicsByRecency(pc.FireHistory) {
			fmt.Fprintf(&b, "- %s: fired %d× this week, last %s ago, accepted %d, dismissed %d\n", f.Topic, f.FiresLastWeek, ago(now, f.LastFired), f.Accepted, f.Dismissed)
		}
	}

	if len(pc.ActiveSessions) > 0 {
		b.WriteString("\n# Active sessions\n")
		for _, s := range pc.ActiveSessions {
			fmt.Fprintf(&b, "- %s (last active %s ago)", s.Key, ago(now, s.LastActive))
			if s.LastUser != "" {
				fmt.Fprintf(&b, "\n  owner: %s", oneLine(s.LastUser, 200))
			}
			if s.LastAssistant != "" {
				fmt.Fprintf(&b, "\n  raven: %s", oneLine(s.LastAssistant, 200))
			}
			b.WriteByte('\n')
		}
	}

	if len(pc.Calendar) > 0 {
		b.WriteString("\n# Calendar\n")
		for _, c := range pc.Calendar {
			when := c.Start.Format("Mon 02 Jan 15:04")
			if c.AllDay {
				when = c.Start.Format("Mon 02 Jan") + " (all day)"
			} else if !c.End.IsZero() {
				when += "–" + c.End.Format("15:04")
			}
			fmt.Fprintf(&b, "- %s %s", when, c.Title)
			if c.Location != "" {
				fmt.Fprintf(&b, " @ %s", c.Location)
			}
			b.WriteByte('\n')
		}
	}

	if len(pc.Routines) > 0 {
		b.WriteString("\n# Routines\n")
		for _, r := range pc.Routines {
			fmt.Fprintf(&b, "- %s", r.Description)
			if r.When != "" {
				fmt.Fprintf(&b, " (%s)", r.When)
			}
			if r.Samples > 0 {
				fmt.Fprintf(&b, " — seen %d times, confidence %.2f", r.Samples, r.Confidence)
			}
			if !r.LastSeen.IsZero() {
				fmt.Fprintf(&b, ", last %s", r.LastSeen.In(now.Location()).Format("Mon 2 Jan 15:04"))
			}
			b.WriteByte('\n')
		}
	}

	section(&b, "Attention", pc.AttentionMD)
	section(&b, "Recent behaviour", pc.BehaviorsRecent)
	section(&b, "Long-term memory (MEMORY.md)", pc.MemoryMD)
	section(&b, "Recent history (tail of HISTORY.md)", pc.HistoryMDRecent)
	b.WriteString(plannerCallLine)
	return b.String()
}

const plannerCallLine = "\nDecide now by calling planner_decision once.\n"

// renderDiscoveryContext is the planner's context, asking for the
// discoverer's tool instead of the planner's.
func renderDiscoveryContext(pc PlannerContext) string {
	return strings.TrimSuffix(RenderContext(pc), plannerCallLine) + "\nPropose the menu by calling " + discoveryTool + " once.\n"
}

// discoverySystemPrompt is the task discoverer's identity; the tool kind
// is described only when there are tools to run, so the model does not
// invent them.
func discoverySystemPrompt(maxOpt int, offered []ToolInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "You are Raven's task discoverer. From the owner's memory and recent history, propose at most %d concrete things Raven could do for them today. ", maxOpt)
	if len(offered) == 0 {
		b.WriteString("Each option is a reply (a short piece of information to send) or a spawn (a self-contained background task). Propose nothing rather than filler.")
		return b.String()
	}
	b.WriteString("Each option is a reply (a short piece of information to send), a spawn (a self-contained background task) or a tool (one of the tools below, run once with the JSON object args when the owner picks it; its output is the answer). Propose nothing rather than filler.\n\nTools:\n")
	for _, t := range offered {
		fmt.Fprintf(&b, "- %s", t.Name)
		if props, ok := t.Parameters["properties"].(map[string]any); ok && len(props) > 0 {
			names := make([]string, 0, len(props))
			for k := range props {
				names = append(names, k)
			}
			sort.Strings(names)
			fmt.Fprintf(&b, "(%s)", strings.Join(names, ", "))
		}
		if d := oneLine(firstLine(t.Description), 160); d != "" {
			fmt.Fprintf(&b, ": %s", d)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// discoveryToolDef is the propose_tasks tool; tool and args exist only
// when tools are offered, the tool name restricted to them.
func discoveryToolDef(offered []ToolInfo) llm.Tool {
	kinds := []any{"reply", "spawn"}
	option := map[string]any{
		"title": map[string]any{"type": "string"}, "reason": map[string]any{"type": "string"},
		"reply": map[string]any{"type": "string"}, "task": map[string]any{"type": "string"},
	}
	if len(offered) > 0 {
		kinds = append(kinds, "tool")
		names := make([]any, len(offered))
		for i, t := range offered {
			names[i] = t.Name
		}
		option["tool"] = map[string]any{"type": "string", "enum": names, "description": "for kind tool: the tool to run"}
		option["args"] = map[string]any{"type": "object", "description": "for kind tool: the tool's arguments"}
	}
	option["kind"] = map[string]any{"type": "string", "enum": kinds}
	return llm.Tool{Name: discoveryTool, Description: "Propose today's task menu.", Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"title": map[string]any{"type": "string"},
			"options": map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "properties": option, "required": []any{"title", "kind"},
			}},
		},
		"required": []any{"options"},
	}}
}

func section(b *strings.Builder, title, body string) {
	body = strings.TrimSpace(body)
	if body == "" {
		return
	}
	fmt.Fprintf(b, "\n# %s\n%s\n", title, body)
}

func orLow(p Priority) Priority {
	if p == "" {
		return PriorityLow
	}
	return p
}

func ago(now, t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return d.Round(time.Minute).String()
}

// oneLine flattens s to one line of at most n bytes (on a rune boundary).
func oneLine(s string, n int) string { return textcut.Line(s, n) }
