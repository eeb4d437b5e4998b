package feedback

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/llm"
	"github.com/raven-agent/raven/internal/spine"
	"github.com/raven-agent/raven/internal/tools"
)

const childEnv = "RAVEN_FEEDBACK_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		parts := strings.Split(spec, "|")
		n, _ := strconv.Atoi(parts[2])
		tr := NewTracker(parts[0], Options{LockTimeout: time.Minute})
		for i := 0; i < n; i++ {
			rec := Record{NudgeID: fmt.Sprintf("%s-%d", parts[1], i), Topic: strings.Repeat("t", 3000), Session: parts[1]}
			if err := tr.RecordDispatched(context.Background(), rec); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var t0 = time.Date(2025, 3, 12, 10, 0, 0, 0, time.UTC)

func newTracker(t *testing.T) (*Tracker, *clock.Fake) {
	clk := clock.NewFake(t0)
	return NewTracker(filepath.Join(t.TempDir(), "sentinel", "feedback.jsonl"), Options{Clock: clk}), clk
}

func mustAppend(t *testing.T, tr *Tracker, r Record) {
	t.Helper()
	if err := tr.Append(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func TestAppendLookupRecent(t *testing.T) {
	tr, _ := newTracker(t)
	ctx := context.Background()
	if r, _ := tr.Recent(5); len(r) != 0 {
		t.Fatal("missing file must read as empty")
	}
	if _, ok, err := tr.Lookup("n-1"); ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := tr.RecordDispatched(ctx, Record{NudgeID: "n-1", Topic: "tax", Session: "telegram:1", Action: "nudge", Priority: "high"}); err != nil {
		t.Fatal(err)
	}
	rec, err := tr.RecordVerdict(ctx, "n-1", EventDismissed, "", "stop it")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Topic != "tax" || rec.Session != "telegram:1" || rec.Source != SourceSentinel || rec.Priority != "high" {
		t.Fatalf("verdict did not inherit the dispatch: %+v", rec)
	}
	if _, err := tr.RecordVerdict(ctx, "n-404", EventAccepted, "", ""); !errors.Is(err, ErrUnknownNudge) {
		t.Fatalf("got %v", err)
	}
	if _, err := tr.RecordVerdict(ctx, "n-1", "meh", "", ""); err == nil {
		t.Fatal("bad verdict accepted")
	}
	if err := tr.Append(ctx, Record{NudgeID: "x", Event: "weird"}); err == nil {
		t.Fatal("unknown event accepted")
	}
	r, err := tr.Recent(10)
	if err != nil || len(r) != 2 || r[0].Event != EventDismissed || r[1].Event != EventDispatched {
		t.Fatalf("recent %+v %v", r, err)
	}
	if d, ok, _ := tr.Lookup("n-1"); !ok || d.Event != EventDispatched {
		t.Fatalf("lookup %+v", d)
	}
}

func TestAcceptanceRate(t *testing.T) {
	tests := []struct {
		name        string
		records     []Record
		wantRate    float64
		wantSamples int
	}{
		{"empty", nil, 0, 0},
		{"mixed", []Record{
			{Event: EventAccepted, Time: t0.Add(-time.Hour)},
			{Event: EventAccepted, Time: t0.Add(-time.Hour)},
			{Event: EventDismissed, Time: t0.Add(-time.Hour)},
			{Event: EventDismissed, Time: t0.Add(-time.Hour)},
		}, 0.5, 4},
		{"neutral and dispatched excluded", []Record{
			{Event: EventDispatched, Time: t0.Add(-time.Hour)},
			{Event: EventNeutral, Time: t0.Add(-time.Hour)},
			{Event: EventAccepted, Time: t0.Add(-time.Hour)},
		}, 1, 1},
		{"cron excluded", []Record{
			{Event: EventDispatched, Source: SourceCron, Time: t0.Add(-time.Hour)},
			{Event: EventDismissed, Source: SourceCron, Time: t0.Add(-time.Hour)},
			{Event: EventAccepted, Source: SourceSentinel, Time: t0.Add(-time.Hour)},
		}, 1, 1},
		{"outside window excluded", []Record{
			{Event: EventDismissed, Time: t0.Add(-8 * 24 * time.Hour)},
			{Event: EventAccepted, Time: t0.Add(-time.Hour)},
		}, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := newTracker(t)
			for i, r := range tc.records {
				r.NudgeID = fmt.Sprint("n-", i)
				mustAppend(t, tr, r)
			}
			rate, n := tr.AcceptanceRate(7 * 24 * time.Hour)
			if rate != tc.wantRate || n != tc.wantSamples {
				t.Fatalf("got %v/%d want %v/%d", rate, n, tc.wantRate, tc.wantSamples)
			}
		})
	}
}

// The scan stops at the first record older than the window: records before
// it (here deliberately out of order) are never read.
func TestAcceptanceRateReadsOnlyTheTail(t *testing.T) {
	tr, _ := newTracker(t)
	for i := 0; i < 50; i++ {
		mustAppend(t, tr, Record{NudgeID: fmt.Sprint("head-", i), Event: EventDismissed, Time: t0.Add(-time.Minute)})
	}
	for i := 0; i < 2000; i++ {
		mustAppend(t, tr, Record{NudgeID: fmt.Sprint("old-", i), Event: EventDismissed, Time: t0.Add(-30 * 24 * time.Hour)})
	}
	for i := 0; i < 3; i++ {
		mustAppend(t, tr, Record{NudgeID: fmt.Sprint("new-", i), Event: EventAccepted, Time: t0.Add(-time.Hour)})
	}
	if rate, n := tr.AcceptanceRate(7 * 24 * time.Hour); rate != 1 || n != 3 {
		t.Fatalf("got %v/%d; scan went past the window", rate, n)
	}
}

func TestMaybeTrim(t *testing.T) {
	tr, clk := newTracker(t)
	ctx := context.Background()
	for i, age := range []time.Duration{40, 35, 10, 0} {
		mustAppend(t, tr, Record{NudgeID: fmt.Sprint("n-", i), Event: EventDispatched, Time: t0.Add(-age * 24 * time.Hour)})
	}
	if ok, err := tr.MaybeTrim(ctx); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r, _ := tr.Recent(10)
	if len(r) != 2 || r[1].NudgeID != "n-2" {
		t.Fatalf("after trim %+v", r)
	}
	// Same day: no second pass even if old records appear.
	mustAppend(t, tr, Record{NudgeID: "late-old", Event: EventDispatched, Time: t0.Add(-90 * 24 * time.Hour)})
	if ok, _ := tr.MaybeTrim(ctx); ok {
		t.Fatal("trimmed twice in one day")
	}
	// Next day: first record is recent, so nothing is rewritten.
	clk.Advance(24 * time.Hour)
	st1, _ := os.Stat(tr.Path())
	if ok, err := tr.MaybeTrim(ctx); ok || err != nil {
		t.Fatal(ok, err)
	}
	st2, _ := os.Stat(tr.Path())
	if !os.SameFile(st1, st2) {
		t.Fatal("file rewritten without need")
	}
}

func TestConcurrentProcessesDoNotInterleave(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	path := filepath.Join(t.TempDir(), "feedback.jsonl")
	exe, _ := os.Executable()
	var cmds []*exec.Cmd
	for _, name := range []string{"a", "b"} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|200", childEnv, path, name))
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("got %d lines", len(lines))
	}
	for i, l := range lines {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %d torn: %v", i, err)
		}
	}
}

// spyRecorder wraps the tracker the way System.RecordVerdict does, to see
// what the tool passes on.
type spyRecorder struct {
	tr    *Tracker
	calls []string
}

func (s *spyRecorder) RecordVerdict(ctx context.Context, id, verdict, session, reason string) (Record, error) {
	rec, err := s.tr.RecordVerdict(ctx, id, verdict, session, reason)
	if err == nil {
		s.calls = append(s.calls, id+"="+verdict+"@"+session)
	}
	return rec, err
}

func TestTool(t *testing.T) {
	tr, _ := newTracker(t)
	ctx := context.Background()
	for _, id := range []string{"n-1", "n-2", "n-3"} {
		if err := tr.RecordDispatched(ctx, Record{NudgeID: id, Topic: "tax", Session: "telegram:1"}); err != nil {
			t.Fatal(err)
		}
	}
	spy := &spyRecorder{tr: tr}
	var tool tools.Tool = NewTool(spy)
	if tool.Name() != "nudge_feedback" {
		t.Fatal(tool.Name())
	}
	reg := tools.NewRegistry(tool)
	tests := []struct {
		name    string
		args    string
		wantErr error
		errText string
	}{
		{"unknown field", `{"verdict":"accepted","nudge_id":"n-1","extra":1}`, ErrBadArgs, `unexpected additional properties ["extra"]`},
		{"bad verdict", `{"verdict":"maybe","nudge_id":"n-1"}`, ErrBadArgs, "verdict"},
		{"missing id", `{"verdict":"accepted"}`, ErrBadArgs, "nudge_id"},
		{"blank id", `{"verdict":"accepted","nudge_id":"  "}`, ErrBadArgs, "nudge_id"},
		{"wrong type", `{"verdict":1,"nudge_id":"n-1"}`, ErrBadArgs, ""},
		{"not json", `verdict=accepted`, ErrBadArgs, ""},
		{"trailing data", `{"verdict":"accepted","nudge_id":"n-1"} {}`, ErrBadArgs, "not valid JSON"},
		{"unknown nudge", `{"verdict":"accepted","nudge_id":"n-999"}`, ErrUnknownNudge, "n-999"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tool.Run(ctx, json.RawMessage(tc.args))
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.errText) {
				t.Fatalf("got %v", err)
			}
		})
	}
	if len(spy.calls) != 0 {
		t.Fatal("recorded a failed call")
	}
	// The registry validates against Parameters before Run.
	if _, err := reg.Run(ctx, llm.ToolCall{Name: ToolName, Arguments: `{"verdict":"meh","nudge_id":"n-1"}`}); err == nil {
		t.Fatal("schema accepted a bad verdict")
	}

	sessions := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"agent turn", tools.WithTurn(ctx, tools.TurnInfo{Origin: spine.OriginUser, Conversation: "telegram:1", Channel: "telegram", ChatID: "1"}), "telegram:1"},
		{"turn without conversation id", tools.WithTurn(ctx, tools.TurnInfo{Channel: "webhook", ChatID: "9"}), "webhook:9"},
		{"WithSession", WithSession(ctx, "cli:local"), "cli:local"},
	}
	for i, tc := range sessions {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("n-%d", i+1)
			out, err := reg.Run(tc.ctx, llm.ToolCall{Name: ToolName, Arguments: `{"verdict":"dismissed","nudge_id":"` + id + `","reason":"stop reminding me"}`})
			if err != nil || !strings.Contains(out, "dismissed") {
				t.Fatal(out, err)
			}
			r, _ := tr.Recent(1)
			if r[0].Session != tc.want || r[0].Reason != "stop reminding me" || r[0].Topic != "tax" || r[0].NudgeID != id {
				t.Fatalf("%+v", r[0])
			}
		})
	}
	if len(spy.calls) != 3 {
		t.Fatalf("calls %v", spy.calls)
	}
	if k, ok := SessionFrom(ctx); ok || k != "" {
		t.Fatal("empty ctx has a session")
	}
}

func TestNudgesJoinsLatestVerdict(t *testing.T) {
	tr, clk := newTracker(t)
	long := strings.Repeat("é", MaxContent) // multi-byte: the cut must stay valid UTF-8
	mustAppend(t, tr, Record{Event: EventDispatched, NudgeID: "n-1", Content: "plumber Thursday"})
	clk.Advance(time.Minute)
	mustAppend(t, tr, Record{Event: EventDispatched, NudgeID: "n-2", Content: long})
	clk.Advance(time.Minute)
	mustAppend(t, tr, Record{Event: EventAccepted, NudgeID: "n-1", Reason: "yes"})
	clk.Advance(time.Minute)
	mustAppend(t, tr, Record{Event: EventDismissed, NudgeID: "n-1", Reason: "changed my mind"})
	got, err := tr.Nudges(10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].NudgeID != "n-2" || got[1].NudgeID != "n-1" {
		t.Fatalf("%+v", got)
	}
	if got[0].Verdict != "" || !utf8.ValidString(got[0].Content) || len(got[0].Content) > MaxContent+len("…") {
		t.Fatalf("n-2: %+v", got[0])
	}
	if got[1].Verdict != EventDismissed || got[1].VerdictReason != "changed my mind" || got[1].Content != "plumber Thursday" {
		t.Fatalf("n-1: %+v", got[1])
	}
	if one, _ := tr.Nudges(1); len(one) != 1 || one[0].NudgeID != "n-2" {
		t.Fatalf("limit: %+v", one)
	}
}

func BenchmarkAcceptanceRateLargeFile(b *testing.B) {
	path := filepath.Join(b.TempDir(), "feedback.jsonl")
	clk := clock.NewFake(t0)
	f, _ := os.Create(path)
	line := func(r Record) { d, _ := json.Marshal(r); f.Write(append(d, '\n')) }
	for i := 0; i < 200_000; i++ { // ~30 MB of history older than the window
		line(Record{NudgeID: fmt.Sprint("o-", i), Event: EventAccepted, Time: t0.Add(-60 * 24 * time.Hour)})
	}
	for i := 0; i < 200; i++ {
		line(Record{NudgeID: fmt.Sprint("n-", i), Event: EventDismissed, Time: t0.Add(-time.Hour)})
	}
	f.Close()
	tr := NewTracker(path, Options{Clock: clk})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, n := tr.AcceptanceRate(7 * 24 * time.Hour); n != 200 {
			b.Fatal(n)
		}
	}
}
