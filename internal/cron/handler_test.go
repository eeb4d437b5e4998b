package cron

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/raven-agent/raven/internal/spine"
)

type delivered struct {
	mu   sync.Mutex
	msgs []spine.Message
}

func (d *delivered) outlet() spine.Outlet {
	return spine.OutletFunc(func(_ context.Context, m spine.Message) error {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.msgs = append(d.msgs, m)
		return nil
	})
}

func (d *delivered) got() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, m := range d.msgs {
		out = append(out, m.Channel+":"+m.ChatID+"="+m.Content)
	}
	sort.Strings(out)
	return out
}

type fireEnv struct {
	hub      *spine.Hub
	out      *delivered
	reqs     []spine.TurnRequest
	ledger   []string
	woken    []string
	sched    *spine.Scheduler
	handler  *FireHandler
	mu       sync.Mutex
	noModel  bool
	attached []string
}

func newFireEnv(t *testing.T, noModel bool, attached ...string) *fireEnv {
	e := &fireEnv{hub: spine.NewHub(nil), out: &delivered{}, noModel: noModel}
	for _, ch := range append([]string{"telegram", "webhook"}, attached...) {
		e.hub.Register(ch, e.out.outlet())
	}
	e.sched = spine.NewScheduler(func(ctx context.Context, turn *spine.Turn) (string, error) {
		e.mu.Lock()
		e.reqs = append(e.reqs, turn.Request)
		e.mu.Unlock()
		return "reply:" + strings.SplitN(turn.Request.Content, "\n", 2)[1], nil
	}, e.hub, spine.Options{})
	t.Cleanup(func() { e.sched.Shutdown(context.Background()) })
	o := FireOptions{
		Hub:     e.hub,
		Submit:  e.sched.Submit,
		Forward: []string{"telegram", "webhook:hook-1"},
		LastChatID: func(ch string) (string, bool) {
			if ch == "telegram" {
				return "42", true
			}
			return "", false
		},
		RecordFire: func(_ context.Context, topic, content string) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.ledger = append(e.ledger, topic+"|"+content)
			return nil
		},
		OnFired: func(id string) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.woken = append(e.woken, id)
		},
	}
	if noModel {
		o.Submit = nil
	}
	e.handler = NewFireHandler(o)
	return e
}

func TestDeliveryBranches(t *testing.T) {
	job := func(s Spec) Job {
		j, err := NewJob(Spec{Name: "standup", Message: "prep notes", Every: "1h",
			Deliver: s.Deliver, Channel: s.Channel, To: s.To, Broadcast: s.Broadcast, Silent: s.Silent}, t0)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	tests := []struct {
		name     string
		noModel  bool
		attached []string
		spec     Spec
		status   Status
		err      error
		// turn source channel ("" = no turn) and delivered messages
		turnChannel string
		want        []string
		ledger      bool
	}{
		{name: "single real target rides the hub", spec: Spec{Deliver: true, Channel: "telegram", To: "7"},
			status: StatusDelivered, turnChannel: "telegram", want: []string{"telegram:7=reply:prep notes"}, ledger: true},
		{name: "single real target chat from latest session", spec: Spec{Deliver: true, Channel: "telegram"},
			status: StatusDelivered, turnChannel: "telegram", want: []string{"telegram:42=reply:prep notes"}, ledger: true},
		{name: "cli expands to forward channels", spec: Spec{Deliver: true},
			status: StatusDelivered, turnChannel: "cron",
			want: []string{"telegram:42=reply:prep notes", "webhook:hook-1=reply:prep notes"}, ledger: true},
		{name: "cli attached plus forwards", attached: []string{"cli"}, spec: Spec{Deliver: true, Channel: "cli"},
			status: StatusDelivered, turnChannel: "cron",
			want: []string{"cli:=reply:prep notes", "telegram:42=reply:prep notes", "webhook:hook-1=reply:prep notes"}, ledger: true},
		{name: "broadcast submits on cron and posts to every target", spec: Spec{Broadcast: true},
			status: StatusDelivered, turnChannel: "cron",
			want: []string{"telegram:42=reply:prep notes", "webhook:hook-1=reply:prep notes"}, ledger: true},
		{name: "silent drops the reply", spec: Spec{Silent: true},
			status: StatusSilent, turnChannel: "cron", want: nil, ledger: true},
		{name: "not delivering is silent", spec: Spec{},
			status: StatusSilent, turnChannel: "cron", want: nil, ledger: true},
		{name: "real channel with no known chat", spec: Spec{Deliver: true, Channel: "webhook"},
			status: StatusUndelivered, err: ErrNoTarget},
		{name: "no model delivers verbatim", noModel: true, spec: Spec{Deliver: true, Channel: "telegram", To: "7"},
			status: StatusDelivered, want: []string{"telegram:7=prep notes"}, ledger: true},
		{name: "no model broadcast verbatim", noModel: true, spec: Spec{Broadcast: true},
			status: StatusDelivered, want: []string{"telegram:42=prep notes", "webhook:hook-1=prep notes"}, ledger: true},
		{name: "no model silent is skipped", noModel: true, spec: Spec{Silent: true}, status: StatusSkipped},
		{name: "no model, outlet missing", noModel: true, spec: Spec{Deliver: true, Channel: "tui"},
			status: StatusDelivered, want: []string{"telegram:42=prep notes", "webhook:hook-1=prep notes"}, ledger: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFireEnv(t, tt.noModel, tt.attached...)
			j := job(tt.spec)
			out, err := e.handler.Handle(context.Background(), j, t0)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if out.Status != tt.status {
				t.Fatalf("status = %s, want %s", out.Status, tt.status)
			}
			if tt.turnChannel == "" && len(e.reqs) != 0 {
				t.Fatalf("unexpected turn %+v", e.reqs)
			}
			if tt.turnChannel != "" {
				if len(e.reqs) != 1 {
					t.Fatalf("turns = %d", len(e.reqs))
				}
				r := e.reqs[0]
				if r.Origin != spine.OriginCron || r.Conversation() != "cron:"+j.ID || r.Channel != tt.turnChannel {
					t.Fatalf("turn = %+v", r)
				}
			}
			if got := e.out.got(); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("delivered %q, want %q", got, tt.want)
			}
			if tt.ledger != (len(e.ledger) == 1) || (tt.ledger && e.ledger[0] != "notes-prep|prep notes") { // the message's topic, not the job's name
				t.Fatalf("ledger = %q", e.ledger)
			}
			if len(e.woken) != 1 || e.woken[0] != j.ID {
				t.Fatalf("wake = %q", e.woken)
			}
		})
	}
}

func TestNotifyGoesToJobTargetsOrOwnerSurfaces(t *testing.T) {
	e := newFireEnv(t, true)
	j, _ := NewJob(Spec{Name: "n", Message: "m", Every: "1h", Deliver: true, Channel: "telegram", To: "9"}, t0)
	e.handler.Notify(context.Background(), j, "paused")
	if got := e.out.got(); len(got) != 1 || got[0] != "telegram:9=paused" {
		t.Fatalf("notice = %q", got)
	}
	// The handler is the Handler the service calls.
	var _ Handler = e.handler.Handle
}
