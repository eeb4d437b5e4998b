package attention

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/memory"
	"github.com/raven-agent/raven/internal/statefile"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Wednesday 2025-03-12 10:00 UTC.
var t0 = time.Date(2025, 3, 12, 10, 0, 0, 0, time.UTC)

func TestDeadlines(t *testing.T) {
	tests := []struct {
		name    string
		memory  string
		history string
		want    []string // substrings, in order
		not     []string
	}{
		{"nothing dated", "likes tea\n", "", nil, []string{"-"}},
		{"memory date in window", "- tax return due 2025-03-15\n", "", []string{"- 2025-03-15 (in 3 days, memory): tax return due 2025-03-15"}, nil},
		{"time kept, sorted soonest first",
			"dentist 2025-03-14 15:00\nplumber 2025-03-13 10:00\n", "",
			[]string{"2025-03-13 10:00 (tomorrow, memory): plumber", "2025-03-14 15:00 (in 2 days, memory): dentist"}, nil},
		{"today and overdue", "call bank 2025-03-12\nparcel pickup 2025-03-11\nancient 2025-03-01\n", "",
			[]string{"2025-03-11 (overdue since yesterday", "2025-03-12 (today"}, []string{"ancient"}},
		{"beyond horizon", "holiday 2025-06-01\n", "", nil, []string{"holiday"}},
		{"history timestamp is not a deadline",
			"", "- 2025-03-12T09:00:00Z [telegram:1] user: hello there\n- 2025-03-12T09:01:00Z [telegram:1] user: the lease renewal is due 2025-03-20\n",
			[]string{"2025-03-20 (in 8 days, history): the lease renewal is due 2025-03-20"}, []string{"hello there"}},
		{"invalid dates ignored", "x 2025-02-31\ny 2025-13-01\nz 2025-03-13 25:99\n", "",
			[]string{"2025-03-13 (tomorrow, memory): z"}, []string{"02-31", "13-01"}},
		{"duplicates collapse", "vat 2025-03-14\n", "- 2025-03-12T09:00:00Z [cli:local] user: vat 2025-03-14\n",
			[]string{"2025-03-14 (in 2 days, memory): vat"}, []string{"history"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Deadlines{}.Produce(context.Background(), Input{Now: t0, Location: time.UTC, Memory: tc.memory, History: tc.history})
			if err != nil {
				t.Fatal(err)
			}
			pos := 0
			for _, w := range tc.want {
				i := strings.Index(got[pos:], w)
				if i < 0 {
					t.Fatalf("missing %q (in order) in:\n%s", w, got)
				}
				pos += i + len(w)
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Fatalf("unexpected %q in:\n%s", n, got)
				}
			}
		})
	}
	many := strings.Repeat("thing 2025-03-13\n", 1) + func() string {
		var b strings.Builder
		for i := range 30 {
			fmt.Fprintf(&b, "task %d 2025-03-14\n", i)
		}
		return b.String()
	}()
	got, _ := Deadlines{Max: 5}.Produce(context.Background(), Input{Now: t0, Location: time.UTC, Memory: many})
	if n := strings.Count(got, "\n"); n != 5 || !strings.HasPrefix(got, "- 2025-03-13") {
		t.Fatalf("max: %d lines:\n%s", n, got)
	}
}

func TestOpenLoops(t *testing.T) {
	s := func(key, user string, userAt, lastActive time.Time) Session {
		return Session{Key: key, LastUser: user, LastUserAt: userAt, LastActive: lastActive}
	}
	tests := []struct {
		name     string
		sessions []Session
		memory   string
		want     []string
		not      []string
	}{
		{"unanswered question", []Session{s("telegram:1", "Can you find the lease PDF?", t0.Add(-time.Hour), t0.Add(-time.Hour))}, "",
			[]string{`- telegram:1 asked 2025-03-12 09:00, no reply yet: "Can you find the lease PDF?"`}, nil},
		{"answered", []Session{s("telegram:1", "Can you?", t0.Add(-time.Hour), t0.Add(-50*time.Minute))}, "", nil, []string{"telegram"}},
		{"not a question", []Session{s("telegram:1", "thanks", t0.Add(-time.Hour), t0.Add(-time.Hour))}, "", nil, []string{"telegram"}},
		{"still within grace", []Session{s("telegram:1", "why?", t0.Add(-time.Minute), t0.Add(-time.Minute))}, "", nil, []string{"telegram"}},
		{"too old", []Session{s("telegram:1", "why?", t0.Add(-100*time.Hour), t0.Add(-100*time.Hour))}, "", nil, []string{"telegram"}},
		{"unknown user time", []Session{{Key: "cli:local", LastUser: "why?", LastActive: t0.Add(-time.Hour)}}, "", nil, []string{"cli"}},
		{"newest first, then checkboxes",
			[]Session{s("a:1", "old?", t0.Add(-5*time.Hour), t0.Add(-5*time.Hour)), s("b:2", "new?", t0.Add(-2*time.Hour), t0.Add(-2*time.Hour))},
			"# Notes\n- [ ] renew passport\n- [x] done thing\n  * [ ] nested item\n",
			[]string{"b:2", "a:1", "- renew passport (unchecked in MEMORY.md)", "- nested item"}, []string{"done thing"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenLoops{}.Produce(context.Background(), Input{Now: t0, Location: time.UTC, Sessions: tc.sessions, Memory: tc.memory})
			if err != nil {
				t.Fatal(err)
			}
			pos := 0
			for _, w := range tc.want {
				i := strings.Index(got[pos:], w)
				if i < 0 {
					t.Fatalf("missing %q (in order) in:\n%s", w, got)
				}
				pos += i + len(w)
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Fatalf("unexpected %q in:\n%s", n, got)
				}
			}
		})
	}
}

type funcProducer struct {
	name  string
	calls int
	fn    func(in Input) (string, error)
}

func (f *funcProducer) Section() string { return f.name }
func (f *funcProducer) Produce(_ context.Context, in Input) (string, error) {
	f.calls++
	return f.fn(in)
}

func writeFile(t testing.TB, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestUpdaterTwoPhasesCompareAndSkipIsolation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "user_memory", "attention.md")
	mem := filepath.Join(dir, "MEMORY.md")
	writeFile(t, mem, "- tax return due 2025-03-15\n- [ ] renew passport\n")
	// The owner's own section must survive byte for byte.
	writeFile(t, path, "# Attention\n\n## Focus\nShip v2 this week.\n  (owner note)\n")
	clk := clock.NewFake(t0)
	mood := &funcProducer{name: "Mood", fn: func(Input) (string, error) { return "calm", nil }}
	broken := &funcProducer{name: "Broken", fn: func(Input) (string, error) { return "", errors.New("model down") }}
	panicky := &funcProducer{name: "Panicky", fn: func(Input) (string, error) { panic("boom") }}
	sessions := []Session{{Key: "telegram:1", LastUser: "where is the lease?", LastUserAt: t0.Add(-time.Hour), LastActive: t0.Add(-time.Hour)}}
	u := NewUpdater(Options{
		Path: path, MemoryPath: mem, Location: time.UTC, Clock: clk, LockTimeout: 200 * time.Millisecond,
		Sessions: func(_ context.Context, since time.Time) ([]Session, error) {
			if !since.Equal(t0.Add(-DefaultSessionWindow)) {
				t.Errorf("since %v", since)
			}
			return sessions, nil
		},
		Producers: []Producer{Deadlines{}, broken, OpenLoops{}, panicky, mood},
	})
	ctx := context.Background()

	rep := u.Update(ctx)
	if strings.Join(rep.Written, ",") != "Deadlines,Open loops,Mood" || len(rep.Failed) != 2 {
		t.Fatalf("first update: %+v", rep)
	}
	if !strings.Contains(rep.Failed["Panicky"].Error(), "boom") {
		t.Fatalf("panic not reported: %v", rep.Failed)
	}
	got, _ := os.ReadFile(path)
	secs := memory.Sections(string(got))
	if secs["Focus"] != "Ship v2 this week.\n  (owner note)\n\n" {
		t.Fatalf("owner section changed: %q", secs["Focus"])
	}
	for _, want := range []string{"tax return due 2025-03-15", "where is the lease?", "renew passport", "## Mood\ncalm"} {
		if !strings.Contains(string(got), want) {
			t.Fatalf("missing %q:\n%s", want, got)
		}
	}
	if _, ok := secs["Broken"]; ok {
		t.Fatal("failed producer wrote a section")
	}

	// Cold tick: nothing changed, so nothing is written — and the lock is
	// not even taken (a peer holding it does not block the update).
	st1, _ := os.Stat(path)
	lock := statefile.NewLock(path + ".lock")
	if err := lock.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	rep = u.Update(ctx)
	if len(rep.Written) != 0 || len(rep.Unchanged) != 3 || len(rep.Failed) != 2 {
		t.Fatalf("cold tick: %+v", rep)
	}
	st2, _ := os.Stat(path)
	if !os.SameFile(st1, st2) || !st1.ModTime().Equal(st2.ModTime()) {
		t.Fatal("cold tick rewrote the file")
	}

	// A change needs the lock: with a peer holding it past the timeout the
	// section fails alone, the others are unaffected.
	mood.fn = func(Input) (string, error) { return "busy", nil }
	rep = u.Update(ctx)
	if !errors.Is(rep.Failed["Mood"], statefile.ErrLockTimeout) || len(rep.Unchanged) != 2 {
		t.Fatalf("locked: %+v", rep)
	}
	lock.Release()
	rep = u.Update(ctx)
	if strings.Join(rep.Written, ",") != "Mood" {
		t.Fatalf("after release: %+v", rep)
	}
	got, _ = os.ReadFile(path)
	if !strings.Contains(string(got), "## Mood\nbusy") || !strings.Contains(string(got), "Ship v2") {
		t.Fatalf("%s", got)
	}
}

func TestUpdaterMissingSources(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "um", "attention.md")
	u := NewUpdater(Options{
		Path: path, MemoryPath: filepath.Join(dir, "none.md"), HistoryPath: filepath.Join(dir, "none2.md"),
		Sessions:  func(context.Context, time.Time) ([]Session, error) { return nil, errors.New("db closed") },
		Producers: []Producer{Deadlines{}, OpenLoops{}}, Clock: clock.NewFake(t0),
	})
	rep := u.Update(context.Background())
	if len(rep.Failed) != 0 || len(rep.Written) != 2 {
		t.Fatalf("%+v", rep)
	}
	// Empty sections exist (the owner sees what is maintained) but hold nothing.
	got, _ := os.ReadFile(path)
	if string(got) != "## Deadlines\n\n## Open loops\n\n" {
		t.Fatalf("%q", got)
	}
	if rep := u.Update(context.Background()); len(rep.Written) != 0 {
		t.Fatalf("second cold update wrote: %+v", rep)
	}
}

// BenchmarkUpdateCold is the per-tick cost when nothing changed.
func BenchmarkUpdateCold(b *testing.B) {
	dir := b.TempDir()
	mem := filepath.Join(dir, "MEMORY.md")
	var m strings.Builder
	for i := range 300 {
		fmt.Fprintf(&m, "- fact %d about something 2025-03-%02d\n", i, i%28+1)
	}
	writeFile(b, mem, m.String())
	hist := filepath.Join(dir, "HISTORY.md")
	var h strings.Builder
	for i := range 400 {
		fmt.Fprintf(&h, "- 2025-03-12T09:%02d:00Z [telegram:1] user: message %d about the 2025-03-20 deadline\n", i%60, i)
	}
	writeFile(b, hist, h.String())
	u := NewUpdater(Options{Path: filepath.Join(dir, "attention.md"), MemoryPath: mem, HistoryPath: hist,
		Producers: []Producer{Deadlines{}, OpenLoops{}}, Clock: clock.NewFake(t0), Location: time.UTC})
	ctx := context.Background()
	u.Update(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if rep := u.Update(ctx); len(rep.Written) != 0 {
			b.Fatal("wrote")
		}
	}
}

// A session that is Raven's own (cron, heartbeat, subagent, sentinel) or
// whose last "user" message is a prompt Raven wrote is not an open loop.
func TestOpenLoopsIgnoreRavensOwnSessions(t *testing.T) {
	asked := t0.Add(-time.Hour)
	tests := []struct {
		name string
		s    Session
		open bool
	}{
		{"owner question", Session{Key: "telegram:1", LastUser: "did the parcel arrive?", LastUserAt: asked, LastActive: asked}, true},
		{"cron conversation", Session{Key: "cron:j-1", LastUser: "is the build green?", LastUserAt: asked, LastActive: asked}, false},
		{"heartbeat conversation", Session{Key: "heartbeat:main", LastUser: "any tasks?", LastUserAt: asked, LastActive: asked}, false},
		{"subagent conversation", Session{Key: "subagent:s1", LastUser: "trains?", LastUserAt: asked, LastActive: asked}, false},
		{"sentinel conversation", Session{Key: "sentinel:x", LastUser: "trains?", LastUserAt: asked, LastActive: asked}, false},
		{"cron prompt in an owner session", Session{Key: "telegram:1", LastUser: "[Scheduled job \"x\" (j-1), due 2025-03-12T09:00:00Z]\nready?", LastUserAt: asked, LastActive: asked}, false},
		{"heartbeat prompt in an owner session", Session{Key: "telegram:1", LastUser: "[Heartbeat] A task is due now. Done?", LastUserAt: asked, LastActive: asked}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenLoops{}.Produce(context.Background(), Input{Now: t0, Location: time.UTC, Sessions: []Session{tc.s}})
			if err != nil {
				t.Fatal(err)
			}
			if open := got != ""; open != tc.open {
				t.Fatalf("open=%v, want %v:\n%s", open, tc.open, got)
			}
		})
	}
}
