package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

// ErrInCronTurn refuses scheduling from inside a cron turn, so a job cannot
// breed jobs.
var ErrInCronTurn = errors.New("cron: the cron tool is not available inside a scheduled job's turn")

// Tool is the agent's cron tool (add, list, remove), validated exactly like
// "raven cron add". Its schema is the embedded typed tool's.
type Tool struct {
	*tools.Typed[toolArgs]
	store *Store
	clock clock.Clock
	// poke, when set, wakes the in-process service after a change.
	poke func()
}

var _ tools.Tool = (*Tool)(nil)

// NewTool returns the cron tool over store. poke may be nil.
func NewTool(store *Store, c clock.Clock, poke func()) *Tool {
	t := &Tool{store: store, clock: c, poke: poke}
	t.Typed = tools.Must(tools.New("cron", toolDescription, t.run, tools.OneOf("action", "add", "list", "remove")))
	return t
}

const toolDescription = "Schedule, list or remove the owner's reminders and recurring jobs. " +
	"action=add needs name, message and exactly one of every (Go duration, >= 1s), " +
	"cron (5-field expression, with tz as an IANA zone) or at (RFC 3339). " +
	"Set deliver=true to send the result to the owner (defaults to this conversation's channel)."

type toolArgs struct {
	Action    string `json:"action"`
	ID        string `json:"id,omitempty" jsonschema:"job id (remove)"`
	Name      string `json:"name,omitempty" jsonschema:"short name; also the topic shared with proactive nudges"`
	Message   string `json:"message,omitempty" jsonschema:"what to do or say when the job fires"`
	Every     string `json:"every,omitempty" jsonschema:"interval such as 30m or 2h"`
	Cron      string `json:"cron,omitempty" jsonschema:"5-field cron expression, e.g. 0 9 * * 1-5"`
	TZ        string `json:"tz,omitempty" jsonschema:"IANA timezone for cron, e.g. Europe/Berlin (default: the owner's machine zone)"`
	At        string `json:"at,omitempty" jsonschema:"one-shot time, RFC 3339 with offset"`
	Deliver   bool   `json:"deliver,omitempty" jsonschema:"send the result to the owner"`
	Channel   string `json:"channel,omitempty" jsonschema:"cli, tui, webhook or telegram"`
	To        string `json:"to,omitempty" jsonschema:"chat id on channel"`
	Broadcast bool   `json:"broadcast,omitempty" jsonschema:"send to every owner channel"`
	Silent    bool   `json:"silent,omitempty" jsonschema:"run without messaging the owner"`
}

// Run refuses a call inside a cron turn before looking at its arguments,
// then validates and runs it.
func (t *Tool) Run(ctx context.Context, raw json.RawMessage) (string, error) {
	if turn, ok := tools.TurnFrom(ctx); ok && (turn.Origin == spine.OriginCron || turn.FromCron) {
		return "", ErrInCronTurn
	}
	return t.Typed.Run(ctx, raw)
}

func (t *Tool) run(ctx context.Context, a toolArgs) (string, error) {
	turn, hasTurn := tools.TurnFrom(ctx)
	switch a.Action {
	case "add":
		if a.Cron != "" && a.TZ == "" {
			a.TZ = SystemZone()
		}
		spec := Spec{Name: a.Name, Message: a.Message, Every: a.Every, Cron: a.Cron, TZ: a.TZ, At: a.At,
			Deliver: a.Deliver, Channel: a.Channel, To: a.To, Broadcast: a.Broadcast, Silent: a.Silent}
		// Deliver back where the owner asked, unless told otherwise.
		if hasTurn && spec.Deliver && !spec.Broadcast && spec.Channel == "" && KnownChannel(turn.Channel) {
			spec.Channel, spec.To = turn.Channel, turn.ChatID
		}
		j, err := NewJob(spec, t.clock.Now())
		if err != nil {
			return "", err
		}
		j, err = t.store.Add(ctx, j)
		if err != nil {
			return "", err
		}
		if t.poke != nil {
			t.poke()
		}
		return fmt.Sprintf("added job %s (%s), next run %s", j.ID, j.Schedule, j.NextRunAt.Format(time.RFC3339)), nil
	case "list":
		if a.ID != "" || a.Name != "" || a.Message != "" {
			return "", errors.New("cron: list takes no other arguments")
		}
		jobs, err := t.store.Jobs(ctx)
		if err != nil {
			return "", err
		}
		if len(jobs) == 0 {
			return "no scheduled jobs", nil
		}
		var b strings.Builder
		for _, j := range jobs {
			state := "enabled"
			if !j.Enabled {
				state = "disabled"
			}
			next := "-"
			if !j.NextRunAt.IsZero() {
				next = j.NextRunAt.Format(time.RFC3339)
			}
			fmt.Fprintf(&b, "%s  %s  %s  next %s  %s\n", j.ID, j.Name, j.Schedule, next, state)
		}
		return b.String(), nil
	case "remove":
		if a.ID == "" {
			return "", errors.New("cron: remove needs id")
		}
		if err := t.store.Remove(ctx, a.ID); err != nil {
			return "", err
		}
		return "removed job " + a.ID, nil
	}
	return "", fmt.Errorf("cron: unknown action %q (want add, list or remove)", a.Action)
}
