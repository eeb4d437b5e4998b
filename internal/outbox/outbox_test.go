package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// open returns a Store on a fresh database file, plus the file path.
func open(t testing.TB, o Options) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raven.db")
	return openAt(t, path, o), path
}

func openAt(t testing.TB, path string, o Options) *Store {
	t.Helper()
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := Open(context.Background(), db, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func item(content string) Item {
	return Item{Origin: OriginCron, Kind: "reply", Conversation: "owner", Channel: "cli", ChatID: "local", Content: content}
}

func TestPutRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, Options{MaxContentBytes: 100})
	cases := []struct {
		name string
		it   Item
		want error
	}{
		{"unknown origin", Item{Origin: "mail", Content: "x"}, ErrInvalid},
		{"no origin", Item{Content: "x"}, ErrInvalid},
		{"empty content", Item{Origin: OriginSystem}, ErrInvalid},
		{"bad utf8 content", Item{Origin: OriginSystem, Content: "a\xffb"}, ErrInvalid},
		{"bad utf8 kind", Item{Origin: OriginSystem, Content: "x", Kind: "\xc3"}, ErrInvalid},
		{"long channel", Item{Origin: OriginSystem, Content: "x", Channel: strings.Repeat("c", maxFieldBytes+1)}, ErrInvalid},
		{"extras not json", Item{Origin: OriginSystem, Content: "x", Extras: json.RawMessage(`{`)}, ErrInvalid},
		{"extras array", Item{Origin: OriginSystem, Content: "x", Extras: json.RawMessage(`[1]`)}, ErrInvalid},
		{"extras null", Item{Origin: OriginSystem, Content: "x", Extras: json.RawMessage(`null`)}, ErrInvalid},
		{"content too large", Item{Origin: OriginSystem, Content: strings.Repeat("x", 101)}, ErrTooLarge},
		{"content+extras too large", Item{Origin: OriginSystem, Content: strings.Repeat("x", 90), Extras: json.RawMessage(`{"a":"0123456789"}`)}, ErrTooLarge},
		{"at the limit", Item{Origin: OriginSystem, Content: strings.Repeat("é", 50)}, nil},
		{"extras object", Item{Origin: OriginSentinel, Content: "x", Extras: json.RawMessage(` { "nudge" : "n1" } `)}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := s.Put(ctx, c.it)
			if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("Put = %q, %v; want %v", id, err, c.want)
			}
			if err != nil && id != "" {
				t.Fatalf("refused Put returned id %q", id)
			}
		})
	}
	items, err := s.Pending(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 {
		t.Fatalf("pending %d items, want the 2 accepted: %+v", len(items), items)
	}
	if got := string(items[1].Extras); got != `{"nudge":"n1"}` {
		t.Fatalf("extras stored as %s", got)
	}
}

func TestPendingOldestFirstWithFields(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s, _ := open(t, Options{Clock: clk})
	// Queued in this order, but the second was created earliest.
	in := []Item{
		{Origin: OriginSentinel, Kind: "nudge", Content: "b", CreatedAt: t0.Add(-time.Minute), Extras: json.RawMessage(`{"nudge_id":"n1"}`)},
		{Origin: OriginCron, Kind: "reply", Content: "a", CreatedAt: t0.Add(-time.Hour), Conversation: "owner", Channel: "telegram", ChatID: "42"},
		{Origin: OriginHeartbeat, Content: "c"},
	}
	for _, it := range in {
		if _, err := s.Put(ctx, it); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	got, err := s.Pending(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, it := range got {
		order = append(order, it.Content)
	}
	if strings.Join(order, "") != "abc" {
		t.Fatalf("order %v, want a b c", order)
	}
	a := got[0]
	if a.Origin != OriginCron || a.Kind != "reply" || a.Conversation != "owner" || a.Channel != "telegram" || a.ChatID != "42" ||
		!a.CreatedAt.Equal(t0.Add(-time.Hour)) || !a.QueuedAt.Equal(t0.Add(time.Second)) || a.Delivered() {
		t.Fatalf("item a = %+v", a)
	}
	if c := got[2]; !c.CreatedAt.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("zero CreatedAt not defaulted to now: %+v", c)
	}
	if lim, _ := s.Pending(ctx, 2); len(lim) != 2 || lim[0].Content != "a" {
		t.Fatalf("Pending(2) = %+v", lim)
	}
	if n, _ := s.Count(ctx); n != 3 {
		t.Fatalf("Count = %d", n)
	}
}

func TestMarkDelivered(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, Options{})
	id, err := s.Put(ctx, item("remind me"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		id      string
		surface string
		want    error
	}{
		{"first surface", id, "tui:1", nil},
		{"same surface again is a no-op", id, "tui:1", nil},
		{"second surface loses", id, "cli", ErrAlreadyDelivered},
		{"unknown id", "ob_nope", "cli", ErrNotFound},
		{"empty surface", id, "", ErrInvalid},
	}
	for _, st := range steps {
		err := s.MarkDelivered(ctx, st.id, st.surface)
		if !errors.Is(err, st.want) || (st.want == nil) != (err == nil) {
			t.Fatalf("%s: MarkDelivered = %v, want %v", st.name, err, st.want)
		}
	}
	got, err := s.Get(ctx, id)
	if err != nil || got.DeliveredTo != "tui:1" || !got.Delivered() {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if p, _ := s.Pending(ctx, 0); len(p) != 0 {
		t.Fatalf("delivered item still pending: %+v", p)
	}
}

func TestClaimLeaseAndRelease(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s, _ := open(t, Options{Clock: clk, ClaimLease: time.Minute})
	a, _ := s.Put(ctx, item("a"))
	b, _ := s.Put(ctx, item("b"))

	got, err := s.Claim(ctx, "tui:1", 1)
	if err != nil || len(got) != 1 || got[0].ID != a || got[0].ClaimedBy != "tui:1" {
		t.Fatalf("Claim = %+v, %v", got, err)
	}
	// A second attacher gets only the unclaimed item and cannot deliver the claimed one.
	got, _ = s.Claim(ctx, "cli", 0)
	if len(got) != 1 || got[0].ID != b {
		t.Fatalf("second Claim = %+v", got)
	}
	if err := s.MarkDelivered(ctx, a, "cli"); !errors.Is(err, ErrClaimed) {
		t.Fatalf("deliver claimed item = %v, want ErrClaimed", err)
	}
	// The claimant dies: after the lease the item goes to whoever attaches next.
	clk.Advance(time.Minute)
	got, _ = s.Claim(ctx, "cli", 0)
	if len(got) != 2 {
		t.Fatalf("after lease Claim = %+v", got)
	}
	if err := s.MarkDelivered(ctx, a, "cli"); err != nil {
		t.Fatal(err)
	}
	// Release gives b back at once; a stranger's Release changes nothing.
	if err := s.Release(ctx, b, "tui:1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, b); got.ClaimedBy != "cli" {
		t.Fatalf("stranger's release dropped the claim: %+v", got)
	}
	if err := s.Release(ctx, b, "cli"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Claim(ctx, "tui:2", 0); len(got) != 1 || got[0].ID != b {
		t.Fatalf("released item not claimable: %+v", got)
	}
	if err := s.Release(ctx, "ob_nope", "cli"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Release unknown = %v", err)
	}
	if _, err := s.Claim(ctx, "", 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Claim empty surface = %v", err)
	}
}

func TestMaxPendingRefusesNewItem(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, Options{MaxPending: 2})
	first, _ := s.Put(ctx, item("1"))
	if _, err := s.Put(ctx, item("2")); err != nil {
		t.Fatal(err)
	}
	if id, err := s.Put(ctx, item("3")); !errors.Is(err, ErrFull) || id != "" {
		t.Fatalf("Put over max = %q, %v; want ErrFull", id, err)
	}
	// Nothing accepted was dropped to make room.
	if p, _ := s.Pending(ctx, 0); len(p) != 2 || p[0].ID != first {
		t.Fatalf("pending after refusal: %+v", p)
	}
	if err := s.MarkDelivered(ctx, first, "cli"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, item("3")); err != nil {
		t.Fatalf("Put after a delivery freed room: %v", err)
	}
}

func TestKeyMakesPutIdempotent(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, Options{})
	it := item("daily digest")
	it.Key = "cron:job1:2026-12-01T08:00"
	id1, err := s.Put(ctx, it)
	if err != nil {
		t.Fatal(err)
	}
	id2, err := s.Put(ctx, it)
	if err != nil || id2 != id1 {
		t.Fatalf("second Put = %q, %v; want %q", id2, err, id1)
	}
	// Still one copy after delivery: a retried producer does not re-queue it.
	if err := s.MarkDelivered(ctx, id1, "tui:1"); err != nil {
		t.Fatal(err)
	}
	if id3, _ := s.Put(ctx, it); id3 != id1 {
		t.Fatalf("Put after delivery = %q, want %q", id3, id1)
	}
	if n, _ := s.Count(ctx); n != 0 {
		t.Fatalf("Count = %d", n)
	}
}

func TestPruneKeepsPendingDropsOldDelivered(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	s, path := open(t, Options{Clock: clk, Retention: 24 * time.Hour})
	old, _ := s.Put(ctx, item("old delivered"))
	waiting, _ := s.Put(ctx, item("still waiting"))
	if err := s.MarkDelivered(ctx, old, "cli"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(12 * time.Hour)
	recent, _ := s.Put(ctx, item("recent delivered"))
	if err := s.MarkDelivered(ctx, recent, "cli"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(13 * time.Hour)
	if n, err := s.Prune(ctx); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	for id, want := range map[string]error{old: ErrNotFound, waiting: nil, recent: nil} {
		if _, err := s.Get(ctx, id); !errors.Is(err, want) || (want == nil) != (err == nil) {
			t.Fatalf("Get %s = %v, want %v", id, err, want)
		}
	}
	// Open prunes too: a gateway that restarts after the retention cleans up.
	clk.Advance(24 * time.Hour)
	s2 := openAt(t, path, Options{Clock: clk, Retention: 24 * time.Hour})
	if _, err := s2.Get(ctx, recent); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Open did not prune: %v", err)
	}
	if _, err := s2.Get(ctx, waiting); err != nil {
		t.Fatalf("pending item pruned: %v", err)
	}
}

func TestSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "raven.db")
	db, err := sqlitedb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for i := range 3 {
		id, err := s.Put(ctx, item(fmt.Sprintf("m%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = true
	}
	var delivered string
	for id := range ids {
		delivered = id
		break
	}
	if err := s.MarkDelivered(ctx, delivered, "tui:1"); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := openAt(t, path, Options{})
	p, err := s2.Pending(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) != 2 {
		t.Fatalf("after reopen %d pending, want 2", len(p))
	}
	for _, it := range p {
		if !ids[it.ID] || it.ID == delivered {
			t.Fatalf("unexpected pending %+v", it)
		}
	}
	if err := s2.MarkDelivered(ctx, delivered, "cli"); !errors.Is(err, ErrAlreadyDelivered) {
		t.Fatalf("delivery forgotten across restart: %v", err)
	}
}

func TestOpenNilDB(t *testing.T) {
	if _, err := Open(context.Background(), nil, Options{}); err == nil {
		t.Fatal("want error")
	}
}

// deliverAll is one attacher: it takes whatever is pending until nothing is,
// and returns the ids it delivered. claim picks Claim+MarkDelivered over a
// bare MarkDelivered race.
func deliverAll(ctx context.Context, s *Store, surface string, claim bool) (mine []string, lost int, err error) {
	for {
		var items []Item
		if claim {
			items, err = s.Claim(ctx, surface, 10)
		} else {
			items, err = s.Pending(ctx, 0)
		}
		if err != nil {
			return mine, lost, err
		}
		if len(items) == 0 {
			if n, err := s.Count(ctx); err != nil || n == 0 {
				return mine, lost, err
			}
			continue // the rest are leased to the other attacher
		}
		for _, it := range items {
			switch err := s.MarkDelivered(ctx, it.ID, surface); {
			case err == nil:
				mine = append(mine, it.ID)
			case errors.Is(err, ErrAlreadyDelivered), errors.Is(err, ErrClaimed):
				lost++
			default:
				return mine, lost, err
			}
		}
	}
}

func TestTwoGoroutinesDeliverEachItemOnce(t *testing.T) {
	for _, claim := range []bool{false, true} {
		t.Run(fmt.Sprintf("claim=%v", claim), func(t *testing.T) {
			ctx := context.Background()
			s, path := open(t, Options{})
			// The second attacher has its own connection pool on the same
			// file, as a TUI beside the gateway would.
			s2 := openAt(t, path, Options{})
			const n = 200
			all := map[string]bool{}
			for i := range n {
				id, err := s.Put(ctx, item(fmt.Sprintf("m%d", i)))
				if err != nil {
					t.Fatal(err)
				}
				all[id] = true
			}
			var wg sync.WaitGroup
			got := make([][]string, 3)
			errs := make([]error, 3)
			for i, st := range []*Store{s, s, s2} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					got[i], _, errs[i] = deliverAll(ctx, st, fmt.Sprintf("surface-%d", i), claim)
				}()
			}
			wg.Wait()
			checkExactlyOnce(t, all, got, errs)
		})
	}
}

func checkExactlyOnce(t *testing.T, all map[string]bool, got [][]string, errs []error) {
	t.Helper()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("deliverer %d: %v", i, err)
		}
	}
	seen := map[string]int{}
	for i, ids := range got {
		for _, id := range ids {
			if j, dup := seen[id]; dup {
				t.Fatalf("%s delivered by %d and %d", id, j, i)
			}
			if !all[id] {
				t.Fatalf("unknown id %s", id)
			}
			seen[id] = i
		}
	}
	if len(seen) != len(all) {
		t.Fatalf("delivered %d of %d", len(seen), len(all))
	}
}
