package statefile

import (
	"context"
	"path/filepath"
	"testing"
)

// Probes never see each other as the holder; the exclusive holder is seen.
func TestLockHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, b := NewLock(path), NewLock(path)
	// A probe in flight (a shared lock) is not a holder to another probe.
	if ok, err := a.fl.TryRLock(); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if held, err := b.Held(); err != nil || held {
		t.Fatalf("a concurrent probe counts as the holder: held=%v err=%v", held, err)
	}
	a.fl.Unlock()
	if err := a.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if held, err := b.Held(); err != nil || !held {
		t.Fatalf("the exclusive holder is not seen: held=%v err=%v", held, err)
	}
	a.Release()
	if held, _ := b.Held(); held {
		t.Fatal("a released lock still reads as held")
	}
}
