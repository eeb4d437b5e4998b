// Package sentinel is Raven's proactive decision subsystem: the context
// assembler, the planner that picks one of five actions, and the tick runner.
package sentinel

import (
	"encoding/json"
	"time"

	"github.com/raven-agent/raven/internal/sentinel/policy"
)

// Action is one of the five structured decisions the planner can take.
type Action string

const (
	// ActionSkip: nothing worth doing this tick.
	ActionSkip Action = "skip"
	// ActionNudge: send a standalone proactive message now.
	ActionNudge Action = "nudge"
	// ActionNudgeInject: append the message to the agent's next reply in
	// the target session.
	ActionNudgeInject Action = "nudge_inject"
	// ActionNudgeDefer: wait until the target session's thread settles.
	ActionNudgeDefer Action = "nudge_defer"
	// ActionSpawnAgent: dispatch a micro-agent for a multi-step task.
	ActionSpawnAgent Action = "spawn_agent"
)

// Actions lists every valid action in prompt order.
var Actions = []Action{ActionSkip, ActionNudge, ActionNudgeInject, ActionNudgeDefer, ActionSpawnAgent}

// Valid reports whether a is one of the five actions.
func (a Action) Valid() bool {
	switch a {
	case ActionSkip, ActionNudge, ActionNudgeInject, ActionNudgeDefer, ActionSpawnAgent:
		return true
	}
	return false
}

// IsNudge reports whether a delivers a nudge message (and so needs one).
func (a Action) IsNudge() bool {
	return a == ActionNudge || a == ActionNudgeInject || a == ActionNudgeDefer
}

// Priority ranks a decision; only high priority may bypass some policy layers.
type Priority string

const (
	PriorityLow    Priority = "low"
	PriorityMedium Priority = "medium"
	PriorityHigh   Priority = "high"
)

// Valid reports whether p is low, medium or high.
func (p Priority) Valid() bool {
	return p == PriorityLow || p == PriorityMedium || p == PriorityHigh
}

// PlannerDecision is the planner's structured answer. The conditionally
// required fields (NudgeMessage, DeferCondition, SpawnTask) are guaranteed
// present for their actions once the planner has returned it.
type PlannerDecision struct {
	Action           Action   `json:"action"`
	Reason           string   `json:"reason,omitempty"`
	Priority         Priority `json:"priority,omitempty"`
	ProactivityScore float64  `json:"proactivity_score"`
	// TargetSession is "channel:chat_id"; empty lets the runner pick the
	// most recently active session.
	TargetSession  string `json:"target_session,omitempty"`
	NudgeMessage   string `json:"nudge_message,omitempty"`
	SpawnTask      string `json:"spawn_task,omitempty"`
	DeferCondition string `json:"defer_condition,omitempty"`
	// Topic is the policy topic tag; empty lets the policy derive it.
	Topic string `json:"topic,omitempty"`
	// SlotID names the planned deadline slot (PlannerContext.DueDeadlines)
	// the decision acts on, so the outage fallback never repeats a
	// reminder the planner already sent. The runner drops an ID it did
	// not offer.
	SlotID string `json:"slot_id,omitempty"`
	// Raw is the tool-call arguments exactly as the model produced them.
	Raw json.RawMessage `json:"raw,omitempty"`
	// ProviderError marks a skip caused by the model being unreachable or
	// failing, as opposed to the model choosing or misformatting: only then
	// may the runner blind-fire a high-priority deadline.
	ProviderError bool `json:"provider_error,omitempty"`

	// At is when the decision was made (set by the runner).
	At time.Time `json:"at,omitzero"`
	// signature is the context hash of a skip, for unchanged-context dedup.
	signature uint64
}

// Skip returns a skip decision with reason.
func Skip(reason string) PlannerDecision {
	return PlannerDecision{Action: ActionSkip, Reason: reason, Priority: PriorityLow}
}

// ActiveSession is a conversation the owner used within the active window.
type ActiveSession struct {
	Key           string    `json:"key"` // "channel:chat_id"
	LastActive    time.Time `json:"last_active"`
	LastUser      string    `json:"last_user,omitempty"`
	LastUserAt    time.Time `json:"last_user_at,omitzero"`
	LastAssistant string    `json:"last_assistant,omitempty"`
}

// Routine is a candidate recurring pattern learned from history.
type Routine struct {
	Description string  `json:"description"`
	When        string  `json:"when,omitempty"` // e.g. "weekdays ~08:30"
	Confidence  float64 `json:"confidence,omitempty"`
	// LastSeen and Samples (distinct days or weeks observed) let the
	// planner tell a fresh, well-established habit from a fading one.
	LastSeen time.Time `json:"last_seen,omitzero"`
	Samples  int       `json:"samples,omitempty"`
}

// CalendarEntry is one calendar event.
type CalendarEntry struct {
	Title    string    `json:"title"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end,omitzero"`
	AllDay   bool      `json:"all_day,omitempty"`
	Location string    `json:"location,omitempty"`
}

// PlanSlot is one pre-planned proactive fire of the day.
type PlanSlot struct {
	ID    string    `json:"id"`
	Topic string    `json:"topic,omitempty"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Recurring slots fire directly; one-shot deadline slots go to the
	// planner, which can tell "not done yet" from "already finished".
	Recurring     bool     `json:"recurring"`
	Deadline      bool     `json:"deadline,omitempty"`
	Message       string   `json:"message"`
	Priority      Priority `json:"priority,omitempty"`
	TargetSession string   `json:"target_session,omitempty"`
}

// Due reports whether now falls in the slot's window.
func (s PlanSlot) Due(now time.Time) bool {
	return !now.Before(s.Start) && now.Before(s.End)
}

// PlannerContext is the planner's only input.
type PlannerContext struct {
	MemoryMD         string                         `json:"memory_md"`
	HistoryMDRecent  string                         `json:"history_md_recent"`
	Routines         []Routine                      `json:"routines"`
	ActiveSessions   []ActiveSession                `json:"active_sessions"`
	NudgePolicyState policy.Snapshot                `json:"nudge_policy_state"`
	Calendar         []CalendarEntry                `json:"calendar"`
	LastDecision     *PlannerDecision               `json:"last_decision,omitempty"`
	FireHistory      map[string]policy.TopicHistory `json:"fire_history"`
	AttentionMD      string                         `json:"attention_md"`
	BehaviorsRecent  string                         `json:"behaviors_recent"`
	// DueDeadlines are one-shot deadline plan slots in their window that
	// have not fired yet; the planner judges whether they still matter.
	DueDeadlines []PlanSlot `json:"due_deadlines,omitempty"`
	Now          time.Time  `json:"now"`
}
