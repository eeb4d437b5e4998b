package predictor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

type routineFixture struct {
	dir, hist, state string
	clk              *clock.Fake
	loc              *time.Location
}

func newRoutineFixture(t *testing.T) *routineFixture {
	dir := t.TempDir()
	return &routineFixture{dir: dir, hist: filepath.Join(dir, "HISTORY.md"), state: filepath.Join(dir, "routines.json"),
		loc: time.UTC, clk: clock.NewFake(time.Date(2025, 3, 28, 20, 0, 0, 0, time.UTC))}
}

func (f *routineFixture) store() *RoutineStore {
	return NewRoutineStore(RoutineStoreOptions{Path: f.state, HistoryPath: f.hist, Location: f.loc, Clock: f.clk})
}

func (f *routineFixture) appendHistory(t *testing.T, s string) {
	t.Helper()
	fh, err := os.OpenFile(f.hist, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// Four Thursdays of gym at 17:00 — a weekly routine.
func gymHistory(loc *time.Location, weeks int) string {
	h := newHistory(loc)
	h.every(time.Date(2025, 3, 6-7*(weeks-4), 0, 0, 0, 0, loc), time.Date(2025, 3, 28, 0, 0, 0, 0, loc), 17, 0, 10, is(time.Thursday), "heading to the gym", "gym time, workout")
	h.noise(time.Date(2025, 3, 1, 0, 0, 0, 0, loc), time.Date(2025, 3, 28, 0, 0, 0, 0, loc), 2)
	return h.String()
}

func TestRoutineStoreIncremental(t *testing.T) {
	f := newRoutineFixture(t)
	full := gymHistory(f.loc, 4)
	half := strings.Index(full, "2025-03-20")
	f.appendHistory(t, full[:half])
	s := f.store()
	s.Routines()
	learned := s.st.LearnedAt
	// Nothing new, same day: no re-learn (the history is not even read).
	f.clk.Advance(time.Minute)
	s.Routines()
	if !s.st.LearnedAt.Equal(learned) {
		t.Fatal("learned again with nothing new")
	}
	// The rest of the history arrives, a torn last line with it.
	f.appendHistory(t, full[half:]+"- 2025-03-28T19:59:00Z [cli:local] user: half a li")
	got := s.Routines()
	if s.st.LearnedAt.Equal(learned) {
		t.Fatal("new owner messages did not re-learn")
	}
	want := NewRoutineLearner(LearnerOptions{}).Learn(full, f.clk.Now(), f.loc)
	if len(want) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("incremental routines\n%+v\nwant the full learner's\n%+v", got, want)
	}
	if info, _ := os.Stat(f.hist); s.st.Offset >= info.Size() {
		t.Fatal("the torn last line was consumed")
	}

	// A restart starts from routines.json: same routines, no re-learn.
	s2 := f.store()
	if got2 := s2.Routines(); !reflect.DeepEqual(got2, got) || !s2.st.LearnedAt.Equal(s.st.LearnedAt) {
		t.Fatalf("after restart: %+v (learned %v), want %+v", got2, s2.st.LearnedAt, got)
	}
	// A new day re-judges staleness even with nothing new.
	f.clk.Advance(24 * time.Hour)
	s2.Routines()
	if s2.st.Day != "2025-03-29" {
		t.Fatalf("day = %s", s2.st.Day)
	}
}

func TestRoutineStoreHistoryRewritten(t *testing.T) {
	f := newRoutineFixture(t)
	f.appendHistory(t, gymHistory(f.loc, 4))
	s := f.store()
	if len(s.Routines()) == 0 {
		t.Fatal("no routine learned")
	}
	// The owner replaces HISTORY.md with a short one: learned again from it.
	if err := os.WriteFile(f.hist+".new", []byte("- 2025-03-28T09:00:00Z [cli:local] user: hello\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.hist+".new", f.hist); err != nil {
		t.Fatal(err)
	}
	if rs := s.Routines(); len(rs) != 0 || len(s.st.Lines) != 1 {
		t.Fatalf("after a rewrite: %+v, %d lines", rs, len(s.st.Lines))
	}
}

func TestRoutineStoreCorruptStateMovedAside(t *testing.T) {
	f := newRoutineFixture(t)
	f.appendHistory(t, gymHistory(f.loc, 4))
	if err := os.WriteFile(f.state, []byte(`{"version":1,"lines":[`), 0o600); err != nil {
		t.Fatal(err)
	}
	if rs := f.store().Routines(); len(rs) == 0 {
		t.Fatal("not learned again after a corrupt state")
	}
	aside, _ := filepath.Glob(f.state + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("corrupt state not moved aside: %v", aside)
	}
	if data, _ := os.ReadFile(aside[0]); string(data) != `{"version":1,"lines":[` {
		t.Fatalf("moved-aside content changed: %q", data)
	}
}

func BenchmarkRoutineStoreUnchanged(b *testing.B) {
	f := newRoutineFixture(&testing.T{})
	f.dir = b.TempDir()
	f.hist, f.state = filepath.Join(f.dir, "HISTORY.md"), filepath.Join(f.dir, "routines.json")
	os.WriteFile(f.hist, []byte(gymHistory(f.loc, 4)), 0o600)
	s := f.store()
	s.Routines()
	b.ReportAllocs()
	for b.Loop() {
		s.Routines()
	}
}

func BenchmarkRoutineLearnerFullTail(b *testing.B) {
	loc := time.UTC
	hist := gymHistory(loc, 4)
	l := NewRoutineLearner(LearnerOptions{})
	now := time.Date(2025, 3, 28, 20, 0, 0, 0, loc)
	b.ReportAllocs()
	for b.Loop() {
		l.Learn(hist, now, loc)
	}
}
