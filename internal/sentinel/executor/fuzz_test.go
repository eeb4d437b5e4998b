package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
)

// FuzzPendingFile: pending_decisions.json bytes either load (and survive
// the store's next write with every retained decision intact) or are
// refused with a typed error — a corrupt file moved aside byte for byte, a
// newer one left untouched — never silently reset.
func FuzzPendingFile(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"decisions":[]}`,
		`{"version":1,"decisions":[{"id":"pd-0123456789abcdef","session":"telegram:42","title":"A few things I could do for you today:","topic":"task-discovery","priority":"low","options":[{"title":"Draft the tax email","kind":"reply","reply":"Here is a draft."},{"title":"Check the Leeds weather","kind":"tool","tool":"weather","args":{"city":"Leeds"}}],"state":"open","created_at":"2026-12-01T08:00:00Z","expires_at":"2026-12-01T20:00:00Z"}]}`,
		`{"version":1,"decisions":[{"id":"pd-1","session":"cli:main","title":"Today?","options":[{"title":"Compare Friday trains","kind":"spawn","task":"Compare Friday trains to Leeds."}],"state":"executing","picked":1,"resume":"awaiting_confirm","created_at":"2026-12-01T08:00:00+01:00","expires_at":"2026-12-01T20:00:00+01:00","updated_at":"2026-12-01T08:30:00Z"}]}`,
		`{"version":1,"decisions":[{"id":"pd-2","session":"telegram:42","options":[],"state":"done","created_at":"2026-11-20T08:00:00Z","expires_at":"2026-11-20T20:00:00Z"}]}`,
		`{"version":2,"decisions":[]}`, `{"version":1,"decisions":[]}}`, `{"decisions":{}}`, `null`, ``, `{"version":1,"decisions":[{"options":[{"args":[1]}]}]}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	clk := clock.NewFake(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "pending_decisions.json")
		old, _ := filepath.Glob(path + ".corrupt-*")
		for _, o := range old {
			os.Remove(o)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		s := NewPendingDecisionStore(path, 0, clk)
		before, err := s.List(ctx)
		switch {
		case errors.Is(err, ErrPendingNewer):
			if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
				t.Fatalf("a newer file was touched: %q", data)
			}
			return
		case errors.Is(err, ErrPendingCorrupt):
			moved, _ := filepath.Glob(path + ".corrupt-*")
			if len(moved) != 1 {
				t.Fatalf("corrupt %q not moved aside: %v", data, moved)
			}
			if got, _ := os.ReadFile(moved[0]); !bytes.Equal(got, data) {
				t.Fatalf("moved-aside bytes differ from %q", data)
			}
			return
		case err != nil:
			t.Fatalf("%q: untyped refusal %v", data, err)
		}
		const session = "fuzz:new-menu"
		if _, err := s.Put(ctx, PendingDecision{Session: session, Title: "t", Options: []Option{{Title: "o", Kind: KindReply}}}); err != nil {
			t.Fatalf("loaded %q but cannot write: %v", data, err)
		}
		after, err := NewPendingDecisionStore(path, 0, clk).List(ctx)
		if err != nil {
			t.Fatalf("the store's own file is refused: %v (from %q)", err, data)
		}
		kept := map[string]int{}
		for _, d := range after {
			enc, _ := json.Marshal(d)
			kept[string(enc)]++
		}
		now := clk.Now()
		for _, d := range before {
			if d.Session == session || !(d.Active(now) || now.Sub(d.CreatedAt) < pendingRetention) {
				continue // superseded by the new menu, or past retention
			}
			enc, _ := json.Marshal(d)
			if kept[string(enc)] == 0 {
				t.Fatalf("a write lost or changed a retained decision of %q:\n %s", data, enc)
			}
			kept[string(enc)]--
		}
	})
}

// fuzzClassifier answers every classify_pick call with fixed arguments.
type fuzzClassifier struct{ args string }

func (c fuzzClassifier) Chat(context.Context, llm.Request) (*llm.Response, error) {
	return &llm.Response{ToolCalls: []llm.ToolCall{{Name: classifyTool, Arguments: c.args}}}, nil
}
func (fuzzClassifier) Name() string { return "classifier" }

// FuzzRoute: matching a reply against a menu never panics and never
// yields a pick outside the menu, a confirm/cancel that was not asked for,
// or a classifier pick below the threshold; "N" always picks option N.
func FuzzRoute(f *testing.F) {
	f.Add("2", uint8(3), false, `{"option":0,"confidence":0.1}`)
	f.Add("/pick 1", uint8(1), false, `{"option":0,"confidence":0.1}`)
	f.Add("the weather one please", uint8(4), false, `{"option":2,"confidence":0.9}`)
	f.Add("yes please!", uint8(2), true, `{"option":0,"confirm":true,"confidence":1}`)
	f.Add("hmm not that", uint8(2), true, `{"option":0,"cancel":true,"confidence":0.8}`)
	f.Add("option 7", uint8(3), false, `{"option":7,"confidence":0.95}`)
	f.Add("#3.", uint8(3), false, `{"option":-1,"confidence":2}`)
	f.Add("what's on today?", uint8(3), false, `not json`)
	f.Add("  NO.  ", uint8(1), true, `{"option":1,"confidence":0.69}`)
	f.Fuzz(func(t *testing.T, reply string, n uint8, awaiting bool, args string) {
		pd := PendingDecision{ID: "pd-1", State: StateOpen}
		for i := range int(n % 12) {
			pd.Options = append(pd.Options, Option{Title: "option " + strconv.Itoa(i+1), Kind: KindReply})
		}
		if awaiting && len(pd.Options) > 0 {
			pd.State, pd.Picked = StateAwaitingConfirm, 1
		}
		r := NewRouter(RouterOptions{Provider: fuzzClassifier{args}})
		m, ok := r.Route(context.Background(), pd, reply)
		if !ok {
			if d, dok := MatchDeterministic(pd, reply); dok {
				t.Fatalf("%q: deterministic match %+v dropped by Route", reply, d)
			}
			return
		}
		switch {
		case m.Confirm || m.Cancel:
			if m.Confirm && m.Cancel || m.Index != 0 {
				t.Fatalf("%q: contradictory match %+v", reply, m)
			}
			if pd.State != StateAwaitingConfirm && !(m.Cancel && m.Via == "deterministic") {
				t.Fatalf("%q: confirm/cancel %+v without a confirmation asked", reply, m)
			}
		case m.Index < 1 || m.Index > len(pd.Options):
			t.Fatalf("%q: pick %d outside a menu of %d", reply, m.Index, len(pd.Options))
		}
		if m.Confidence < 0 || m.Confidence > 1 || m.Via == "classifier" && m.Confidence < 0.7 {
			t.Fatalf("%q: confidence %v via %s", reply, m.Confidence, m.Via)
		}
		if m.Via != "deterministic" && m.Via != "classifier" {
			t.Fatalf("%q: via %q", reply, m.Via)
		}
		if i, err := strconv.Atoi(strings.TrimSpace(reply)); err == nil && i >= 1 && i <= len(pd.Options) && m.Index != i {
			t.Fatalf("%q picked %+v, want option %d", reply, m, i)
		}
	})
}
