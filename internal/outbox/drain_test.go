package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestDrainShowsOldestFirstAndMarksDelivered(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, Options{})
	for i := range drainBatch + 5 { // more than one batch
		if _, err := s.Put(ctx, item(fmt.Sprintf("m%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	var shown []string
	n, err := s.Drain(ctx, "chat:1", func(_ context.Context, it Item) error {
		shown = append(shown, it.Content)
		return nil
	})
	if err != nil || n != drainBatch+5 || len(shown) != n {
		t.Fatalf("Drain = %d, %v; shown %d", n, err, len(shown))
	}
	for i, c := range shown {
		if c != fmt.Sprintf("m%02d", i) {
			t.Fatalf("shown out of order: %v", shown)
		}
	}
	if c, _ := s.Count(ctx); c != 0 {
		t.Fatalf("%d still pending", c)
	}
	if n, err := s.Drain(ctx, "chat:1", nil); n != 0 || err != nil {
		t.Fatalf("Drain of an empty outbox = %d, %v", n, err)
	}
}

func TestDrainReleasesWhatShowFailed(t *testing.T) {
	ctx := context.Background()
	s, _ := open(t, Options{})
	var ids []string
	for i := range 4 {
		id, _ := s.Put(ctx, item(fmt.Sprintf("m%d", i)))
		ids = append(ids, id)
	}
	broken := errors.New("terminal gone")
	n, err := s.Drain(ctx, "tui:1", func(_ context.Context, it Item) error {
		if it.ID == ids[1] {
			return broken
		}
		return nil
	})
	if n != 1 || !errors.Is(err, broken) {
		t.Fatalf("Drain = %d, %v", n, err)
	}
	// The failed item and the rest are free for another surface at once.
	got, _ := s.Claim(ctx, "cli", 0)
	if len(got) != 3 || got[0].ID != ids[1] {
		t.Fatalf("after a failed show, Claim = %+v", got)
	}
}

func TestTwoDrainsShareTheItems(t *testing.T) {
	ctx := context.Background()
	s, path := open(t, Options{})
	s2 := openAt(t, path, Options{})
	all := map[string]bool{}
	for i := range 100 {
		id, _ := s.Put(ctx, item(fmt.Sprintf("m%d", i)))
		all[id] = true
	}
	got := make([][]string, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, st := range []*Store{s, s2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = st.Drain(ctx, fmt.Sprintf("tui:%d", i), func(_ context.Context, it Item) error {
				got[i] = append(got[i], it.ID)
				return nil
			})
		}()
	}
	wg.Wait()
	checkExactlyOnce(t, all, got, errs)
}
