package cron

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

func TestTool(t *testing.T) {
	clk := clock.NewFake(t0)
	store := NewStore(filepath.Join(t.TempDir(), "jobs.json"), clk, nil, time.Second)
	pokes := 0
	tool := NewTool(store, clk, func() { pokes++ })
	userTurn := tools.WithTurn(context.Background(), tools.TurnInfo{Origin: spine.OriginUser, Channel: "telegram", ChatID: "42"})
	cronTurn := tools.WithTurn(context.Background(), tools.TurnInfo{Origin: spine.OriginCron, Conversation: "cron:x"})
	cronChild := tools.WithTurn(context.Background(), tools.TurnInfo{Origin: spine.OriginSubagent, Conversation: "subagent:s1", FromCron: true})

	tests := []struct {
		name string
		ctx  context.Context
		args string
		want string // substring of the result
		err  error  // errors.Is target, or nil
		errS string // substring of the error
	}{
		{"add delivers back to the asking chat", userTurn, `{"action":"add","name":"tea","message":"brew","every":"30m","deliver":true}`, "added job", nil, ""},
		{"refused inside a cron turn", cronTurn, `{"action":"add","name":"x","message":"y","every":"1m"}`, "", ErrInCronTurn, ""},
		{"list refused inside a cron turn", cronTurn, `{"action":"list"}`, "", ErrInCronTurn, ""},
		{"refused in a subagent spawned by a cron turn", cronChild, `{"action":"add","name":"x","message":"y","every":"1m"}`, "", ErrInCronTurn, ""},
		{"unknown field", userTurn, `{"action":"add","name":"x","message":"y","every":"1m","when":"now"}`, "", tools.ErrInvalidArgs, ""},
		{"trailing data", userTurn, `{"action":"list"} {}`, "", tools.ErrInvalidArgs, ""},
		{"every too short", userTurn, `{"action":"add","name":"x","message":"y","every":"10ms"}`, "", ErrEveryTooShort, ""},
		{"bad tz", userTurn, `{"action":"add","name":"x","message":"y","cron":"0 9 * * *","tz":"Nowhere/City"}`, "", ErrUnknownTimezone, ""},
		{"at in past", userTurn, `{"action":"add","name":"x","message":"y","at":"2020-01-01T00:00:00Z"}`, "", ErrAtInPast, ""},
		{"bad channel", userTurn, `{"action":"add","name":"x","message":"y","every":"1m","channel":"fax"}`, "", ErrUnknownChannel, ""},
		{"list", userTurn, `{"action":"list"}`, "tea", nil, ""},
		{"remove unknown", userTurn, `{"action":"remove","id":"nope"}`, "", ErrNotFound, ""},
		{"unknown action", userTurn, `{"action":"edit"}`, "", nil, "enum: edit does not equal any of: [add list remove]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tool.Run(tt.ctx, json.RawMessage(tt.args))
			switch {
			case tt.err != nil:
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
			case tt.errS != "":
				if err == nil || !strings.Contains(err.Error(), tt.errS) {
					t.Fatalf("err = %v, want %q", err, tt.errS)
				}
			case err != nil:
				t.Fatal(err)
			case !strings.Contains(out, tt.want):
				t.Fatalf("out = %q, want %q", out, tt.want)
			}
		})
	}
	jobs, _ := store.Jobs(context.Background())
	if len(jobs) != 1 || jobs[0].Channel != "telegram" || jobs[0].To != "42" || pokes != 1 {
		t.Fatalf("jobs = %+v, pokes %d", jobs, pokes)
	}
	if _, err := tool.Run(userTurn, json.RawMessage(`{"action":"remove","id":"`+jobs[0].ID+`"}`)); err != nil {
		t.Fatal(err)
	}
	if jobs, _ := store.Jobs(context.Background()); len(jobs) != 0 {
		t.Fatalf("after remove: %d jobs", len(jobs))
	}
	var _ tools.Tool = tool
}

func TestRunLogTail(t *testing.T) {
	l := NewRunLog(filepath.Join(t.TempDir(), "runs.jsonl"))
	if runs, err := l.Tail("", 5); err != nil || len(runs) != 0 {
		t.Fatalf("empty: %v %v", runs, err)
	}
	// Enough lines to span several 64 KiB chunks.
	const n = 3000
	for i := 0; i < n; i++ {
		id := "a"
		if i%3 == 0 {
			id = "b"
		}
		if err := l.Append(Run{JobID: id, ScheduledAt: t0.Add(time.Duration(i) * time.Second), Outcome: StatusDelivered,
			Error: strings.Repeat("x", 50)}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		id    string
		last  int
		count int
		first time.Time
	}{
		{"", 10, 10, t0.Add((n - 10) * time.Second)},
		{"b", 4, 4, t0.Add((n - 12) * time.Second)},
		{"", n + 5, n, t0},
		{"b", n, n / 3, t0},
		{"zzz", 3, 0, time.Time{}},
	}
	for _, tt := range tests {
		runs, err := l.Tail(tt.id, tt.last)
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != tt.count {
			t.Fatalf("Tail(%q,%d) = %d runs, want %d", tt.id, tt.last, len(runs), tt.count)
		}
		if tt.count > 0 && !runs[0].ScheduledAt.Equal(tt.first) {
			t.Fatalf("Tail(%q,%d) first = %s, want %s", tt.id, tt.last, runs[0].ScheduledAt, tt.first)
		}
		for i := 1; i < len(runs); i++ {
			if !runs[i].ScheduledAt.After(runs[i-1].ScheduledAt) {
				t.Fatalf("not oldest-first at %d", i)
			}
		}
	}
}
