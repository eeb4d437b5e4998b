package cron

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// seed writes n jobs as one snapshot through the store.
func seed(t *testing.T, h *harness, n int) {
	t.Helper()
	var jobs []Job
	for i := range n {
		j, err := NewJob(Spec{Name: fmt.Sprintf("j%d", i), Message: "m", Every: "1h"}, t0)
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	if err := h.store.Update(context.Background(), func(f *File) (bool, error) {
		f.Jobs = jobs
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func names(f *File) string {
	var b strings.Builder
	for _, j := range f.Jobs {
		b.WriteString(j.Name + " ")
	}
	return b.String()
}

// A running service's re-read after a peer adds one job decodes that one
// job, not the file: before the journal every add made every service
// decode all of jobs.json again.
func TestServiceReloadAfterAddDecodesOneJob(t *testing.T) {
	h := newHarness(t, hopts{})
	seed(t, h, 1000)
	if _, _, err := h.svc.tick(context.Background(), t0, nil); err != nil {
		t.Fatal(err)
	}
	before := h.store.decoded.Load()
	added := h.add(h.peer(), Spec{Name: "new", Message: "m", Every: "1m"})
	if _, _, err := h.svc.tick(context.Background(), t0, nil); err != nil {
		t.Fatal(err)
	}
	if got := h.store.decoded.Load() - before; got != 1 {
		t.Fatalf("reload after one add decoded %d jobs, want 1", got)
	}
	f, _ := h.store.Snapshot(context.Background())
	if len(f.Jobs) != 1001 || f.Jobs[1000].ID != added.ID {
		t.Fatalf("service sees %d jobs, last %q; want 1001 ending with %q", len(f.Jobs), f.Jobs[len(f.Jobs)-1].ID, added.ID)
	}
}

// A snapshot handed out stays as it was while later changes are folded.
func TestSnapshotIsNotChangedByLaterFolds(t *testing.T) {
	h := newHarness(t, hopts{})
	a := h.add(h.store, Spec{Name: "a", Message: "m", Every: "1h"})
	h.add(h.store, Spec{Name: "b", Message: "m", Every: "1h"})
	old, err := h.store.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	was := names(old)
	peer := h.peer()
	h.add(peer, Spec{Name: "c", Message: "m", Every: "1h"})
	if err := peer.SetEnabled(context.Background(), a.ID, false); err != nil {
		t.Fatal(err)
	}
	if err := peer.Remove(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	now, _ := h.store.Snapshot(context.Background())
	if names(old) != was || !old.Jobs[0].Enabled {
		t.Fatalf("old snapshot changed: %q", names(old))
	}
	if names(now) != "b c " {
		t.Fatalf("folded = %q, want b c", names(now))
	}
}

// Every change a peer journals is seen by a fresh process, through the
// compactions the journal's bound triggers.
func TestJournalCompactsAndFreshProcessAgrees(t *testing.T) {
	h := newHarness(t, hopts{})
	var ids []string
	for i := range 400 { // past minCompactBytes: at least one compaction
		ids = append(ids, h.add(h.peer(), Spec{Name: fmt.Sprintf("n%d", i), Message: "m", Every: "1h"}).ID)
	}
	for _, id := range ids[:100] {
		if err := h.store.Remove(context.Background(), id); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(h.store.JournalPath())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 2*minCompactBytes {
		t.Fatalf("journal %d bytes: never compacted", fi.Size())
	}
	got, err := h.peer().Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 300 || got[0].ID != ids[100] || got[299].ID != ids[399] {
		t.Fatalf("fresh process sees %d jobs", len(got))
	}
	again, _ := h.store.Jobs(context.Background())
	if len(again) != 300 {
		t.Fatalf("writer's own view has %d jobs", len(again))
	}
}

// A crash between writing the new snapshot and starting a fresh journal
// leaves lines of the old generation: they are already in the snapshot and
// must not be applied again.
func TestStaleGenerationLinesIgnored(t *testing.T) {
	h := newHarness(t, hopts{})
	h.add(h.store, Spec{Name: "x", Message: "m", Every: "1h"}) // the first write compacts
	a := h.add(h.store, Spec{Name: "a", Message: "m", Every: "1h"})
	h.add(h.store, Spec{Name: "b", Message: "m", Every: "1h"})
	journal, err := os.ReadFile(h.store.JournalPath())
	if err != nil || !bytes.Contains(journal, []byte(a.ID)) {
		t.Fatalf("journal: %q %v", journal, err)
	}
	if err := h.store.Remove(context.Background(), a.ID); err != nil {
		t.Fatal(err)
	}
	// Compact, then put the old journal back as the crash would leave it:
	// re-applied, its put would bring a back.
	if err := h.store.Update(context.Background(), func(*File) (bool, error) { return true, nil }); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.store.JournalPath(), journal, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := h.peer().Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "x" || got[1].Name != "b" {
		t.Fatalf("stale lines re-applied: %+v", got)
	}
	// The next writer compacts the stale lines away.
	h.add(h.peer(), Spec{Name: "c", Message: "m", Every: "1h"})
	if j, _ := os.ReadFile(h.store.JournalPath()); len(j) != 0 {
		t.Fatalf("stale journal kept: %q", j)
	}
	if got, _ := h.peer().Jobs(context.Background()); len(got) != 3 {
		t.Fatalf("after compaction: %d jobs", len(got))
	}
}

// A torn last line (a writer died mid-append) is not read, and the next
// writer cuts it before appending.
func TestTornJournalLineIgnoredThenTrimmed(t *testing.T) {
	h := newHarness(t, hopts{})
	h.add(h.store, Spec{Name: "a", Message: "m", Every: "1h"})
	h.add(h.store, Spec{Name: "b", Message: "m", Every: "1h"})
	fh, err := os.OpenFile(h.store.JournalPath(), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.WriteString(`{"gen":1,"put":{"id":"torn","na`)
	fh.Close()
	got, err := h.peer().Jobs(context.Background())
	if err != nil || len(got) != 2 {
		t.Fatalf("with a torn tail: %d jobs, %v", len(got), err)
	}
	h.add(h.peer(), Spec{Name: "c", Message: "m", Every: "1h"})
	j, _ := os.ReadFile(h.store.JournalPath())
	if bytes.Contains(j, []byte("torn")) {
		t.Fatalf("torn bytes kept: %s", j)
	}
	if got, err := h.peer().Jobs(context.Background()); err != nil || len(got) != 3 {
		t.Fatalf("after trim: %d jobs, %v", len(got), err)
	}
}

// A damaged line inside the journal is never skipped: the journal is moved
// aside and reported, and reads and writes refuse until the owner acts.
func TestCorruptJournalMovedAsideNeverDropped(t *testing.T) {
	h := newHarness(t, hopts{})
	h.add(h.store, Spec{Name: "a", Message: "m", Every: "1h"})
	h.add(h.store, Spec{Name: "b", Message: "m", Every: "1h"})
	h.add(h.store, Spec{Name: "c", Message: "m", Every: "1h"})
	data, _ := os.ReadFile(h.store.JournalPath())
	bad := bytes.Replace(data, []byte(`"put"`), []byte(`"pot"`), 1)
	if err := os.WriteFile(h.store.JournalPath(), bad, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.svc.Run(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Run = %v, want ErrCorrupt", err)
	}
	aside, _ := filepath.Glob(h.store.JournalPath() + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("moved aside: %v", aside)
	}
	if got, _ := os.ReadFile(aside[0]); !bytes.Equal(got, bad) {
		t.Fatal("moved-aside bytes differ")
	}
	if _, err := h.peer().Jobs(context.Background()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Jobs after move-aside = %v", err)
	}
	j, _ := NewJob(Spec{Name: "d", Message: "m", Every: "1m"}, t0)
	if _, err := h.peer().Add(context.Background(), j); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Add after move-aside = %v", err)
	}
	// The owner repairs it and moves it back: every change is there.
	if err := os.WriteFile(h.store.JournalPath(), data, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Remove(aside[0])
	if got, err := h.peer().Jobs(context.Background()); err != nil || len(got) != 3 {
		t.Fatalf("after repair: %d jobs, %v", len(got), err)
	}
}

// A version 1 jobs.json (every build before the journal) loads as is, and
// the first change rewrites it as version 2 so an older build, which would
// not see the journal, refuses it instead of running stale jobs.
func TestVersion1FileLoadsAndIsUpgraded(t *testing.T) {
	h := newHarness(t, hopts{})
	os.MkdirAll(filepath.Dir(h.store.Path()), 0o700)
	v1 := `{
  "version": 1,
  "jobs": [
    {"id": "j1", "name": "standup", "message": "m", "schedule": {"kind": "every", "every": "1h"}, "deliver": false, "enabled": true, "created_at": "2026-06-01T09:00:00Z", "next_run_at": "2026-06-01T10:00:00Z", "fires": 3}
  ]
}
`
	if err := os.WriteFile(h.store.Path(), []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := h.store.Jobs(context.Background())
	if err != nil || len(got) != 1 || got[0].Fires != 3 {
		t.Fatalf("v1 load: %+v %v", got, err)
	}
	h.add(h.peer(), Spec{Name: "n", Message: "m", Every: "1h"})
	raw, _ := os.ReadFile(h.store.Path())
	if !bytes.Contains(raw, []byte(`"version":2`)) || !bytes.Contains(raw, []byte(`"generation":1`)) {
		t.Fatalf("not upgraded:\n%s", raw)
	}
	if got, _ := h.store.Jobs(context.Background()); len(got) != 2 || got[0].ID != "j1" {
		t.Fatalf("after upgrade: %+v", got)
	}
}

// The reader's bound: a journal line never costs more than its own job,
// even for a service that has been running for many changes.
func TestReloadCostFollowsTheChange(t *testing.T) {
	h := newHarness(t, hopts{})
	seed(t, h, 200)
	peer := h.peer()
	if _, err := h.store.Snapshot(context.Background()); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for i := range 5 {
		ids = append(ids, h.add(peer, Spec{Name: fmt.Sprintf("x%d", i), Message: "m", Every: "1h"}).ID)
	}
	if err := peer.RequestRun(context.Background(), ids[0]); err != nil {
		t.Fatal(err)
	}
	before := h.store.decoded.Load()
	f, err := h.store.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := h.store.decoded.Load() - before; got != 6 {
		t.Fatalf("decoded %d jobs for 6 changes", got)
	}
	if i := f.Find(ids[0]); i < 0 || f.Jobs[i].RunRequestedAt.IsZero() {
		t.Fatal("run request not folded")
	}
}

// "raven cron add" in a fresh process appends without decoding a job, and
// still never reuses an id.
func TestColdAddDecodesNothingAndKeepsIDsUnique(t *testing.T) {
	h := newHarness(t, hopts{})
	seed(t, h, 50)
	taken, _ := h.store.Jobs(context.Background())
	cold := h.peer()
	j, _ := NewJob(Spec{Name: "new", Message: "m", Every: "1h"}, t0)
	j.ID = taken[7].ID
	got, err := cold.Add(context.Background(), j)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID == taken[7].ID || got.ID == "" {
		t.Fatalf("id %q reused", got.ID)
	}
	if n := cold.decoded.Load(); n != 0 {
		t.Fatalf("cold add decoded %d jobs", n)
	}
	all, err := h.peer().Jobs(context.Background())
	if err != nil || len(all) != 51 || all[50].ID != got.ID {
		t.Fatalf("after cold add: %d jobs, %v", len(all), err)
	}
}
