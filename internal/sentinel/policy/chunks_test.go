package policy

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/statefile"
)

// indexDump renders everything Check and the snapshots read from a
// ledger, so two ledgers can be compared for equal behaviour. Topics with
// nothing left in them are left out: absent and empty answer alike.
func indexDump(l *ledger) string {
	topics := map[string]topicState{}
	for _, ts := range l.topics {
		if len(ts.fires) == 0 && ts.lastCron == 0 && ts.lastFire == 0 && ts.cronFires == 0 &&
			ts.verdicts.samples() == 0 && len(ts.rejects) == 0 && ts.lastDismissed == 0 {
			continue
		}
		topics[ts.tag] = *ts
	}
	ids := make([]string, len(l.fires))
	for i, f := range l.fires {
		ids[i] = f.ID
	}
	out := fmt.Sprintf("fires %v\nnudges %v\nspawns %v\nsessions %v\ndedup %v\nhours %v high %v dis %d mult %v\n",
		ids, l.nudgeTimes, l.spawnTimes, l.sessions, l.dedup, l.hours, l.high, l.lastDismissal, l.multiplier)
	for _, k := range slices.Sorted(maps.Keys(topics)) {
		ts := topics[k]
		out += fmt.Sprintf("topic %s %+v\n", k, ts)
	}
	return out
}

// mixedRequest varies action, source, sessions and content so every index
// path is taken.
func mixedRequest(i int) Request {
	r := nudge(fmt.Sprintf("telegram:%d", i%7), fmt.Sprintf("topic-%d", i%5), fmt.Sprintf("message %d", i%11))
	switch i % 6 {
	case 1:
		r.Action = ActionSpawn
	case 2:
		r.Answer = true
	case 3:
		r.AlsoSessions = []string{fmt.Sprintf("tui:%d", i%3)}
	}
	return r
}

// A ledger at its cap takes its oldest fires out of the index one by one;
// the result must equal re-indexing every remaining fire.
func TestIndexAtCapEqualsReindex(t *testing.T) {
	cfg := roomyConfig()
	cfg.LedgerCap = 40
	clk := clock.NewFake(checkTime)
	p, err := New(cfg, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 300 {
		clk.Advance(time.Duration(1+i%4) * time.Minute)
		var err error
		if i%9 == 4 {
			err = p.RecordCronFire(ctx, fmt.Sprintf("topic-%d", i%5), "cron says hi")
		} else {
			_, err = p.RecordFired(ctx, mixedRequest(i))
		}
		if err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 {
			_ = p.RecordOutcome(ctx, fmt.Sprintf("topic-%d", i%5), VerdictDismissed)
		}
		got := indexDump(p.led)
		fresh := newLedger()
		fresh.fires = slices.Clone(p.led.fires)
		fresh.outcomes = slices.Clone(p.led.outcomes)
		fresh.multiplier = p.led.multiplier
		fresh.reindex(&p.cfg)
		if want := indexDump(fresh); got != want {
			t.Fatalf("after fire %d the incremental index differs from a re-index:\n got %s\nwant %s", i, got, want)
		}
	}
	if len(p.led.fires) != 40 {
		t.Fatalf("ledger holds %d fires, cap 40", len(p.led.fires))
	}
}

// Processes sharing a state file see the same ledger: a reader that folds
// only the chunks a peer changed ends where a fresh process loading the
// whole file does, through fires, verdicts, the cap and retention.
func TestChunkedLedgerPeersAgree(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	cfg := roomyConfig()
	cfg.LedgerCap = 60
	clk := clock.NewFake(checkTime)
	open := func() *Policy {
		st, err := statefile.Open(path, statefile.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(cfg, Options{Clock: clk, Store: st})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	writer, reader := open(), open()
	ctx := context.Background()
	var lastDismissedID string
	for i := range 200 {
		// Hours apart now and then, so fires spread over many chunks and
		// retention (8 days) drops whole ones.
		clk.Advance(time.Duration(1+i%3)*time.Minute + time.Duration(i%17/16)*20*time.Hour)
		id, err := writer.RecordFired(ctx, mixedRequest(i))
		if err != nil {
			t.Fatal(err)
		}
		// Every kind of verdict, and the owner changing their mind on a
		// nudge (the verdict replaced): only what verdicts index changes.
		switch {
		case i%13 == 0:
			err = writer.RecordOutcome(ctx, fmt.Sprintf("topic-%d", i%5), VerdictAccepted)
		case i%7 == 0:
			err = writer.RecordOutcome(ctx, id, VerdictDismissed)
			lastDismissedID = id
		case i%11 == 0:
			err = writer.RecordOutcome(ctx, id, VerdictNeutral)
		case i%17 == 0 && lastDismissedID != "":
			err = writer.RecordOutcome(ctx, lastDismissedID, VerdictAccepted)
		}
		if err != nil {
			t.Fatal(err)
		}
		reader.Check(ctx, allowReq)
		fresh := open()
		fresh.Check(ctx, allowReq)
		if got, want := indexDump(reader.led), indexDump(fresh.led); got != want {
			t.Fatalf("after fire %d the reader differs from a fresh load:\n got %s\nwant %s", i, got, want)
		}
		if got, want := indexDump(reader.led), indexDump(writer.led); got != want {
			t.Fatalf("after fire %d the reader differs from the writer:\n got %s\nwant %s", i, got, want)
		}
	}
}

// A state file of the older layout (the whole ledger in the "policy"
// section) loads; the next write moves it into chunks, and a process
// reading that sees the same ledger.
func TestLegacyPolicySectionMigrates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	cfg := roomyConfig()
	clk := clock.NewFake(checkTime)
	mem, err := New(cfg, Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 30 {
		clk.Advance(time.Minute)
		if _, err := mem.RecordFired(ctx, mixedRequest(i)); err != nil {
			t.Fatal(err)
		}
	}
	_ = mem.RecordOutcome(ctx, "topic-1", VerdictDismissed)
	st, _ := statefile.Open(path, statefile.Options{})
	if err := st.Update(ctx, func(tx *statefile.Tx) error { return tx.Put(StateSection, mem.led.persist()) }); err != nil {
		t.Fatal(err)
	}
	want := indexDump(mem.led)

	old, _ := statefile.Open(path, statefile.Options{})
	p, err := New(cfg, Options{Clock: clk, Store: old})
	if err != nil {
		t.Fatal(err)
	}
	p.Check(ctx, allowReq)
	if got := indexDump(p.led); got != want {
		t.Fatalf("legacy load:\n got %s\nwant %s", got, want)
	}
	clk.Advance(time.Minute)
	if _, err := p.RecordFired(ctx, mixedRequest(99)); err != nil {
		t.Fatal(err)
	}
	var h head
	if err := old.View(ctx, func(tx *statefile.Tx) error {
		_, err := tx.Get(StateSection, &h)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if h.Format != formatChunked || len(h.Fires) != 0 || len(h.Outcomes) != 0 {
		t.Fatalf("policy section not migrated: format %d, %d fires, %d outcomes", h.Format, len(h.Fires), len(h.Outcomes))
	}
	again, _ := statefile.Open(path, statefile.Options{})
	q, _ := New(cfg, Options{Clock: clk, Store: again})
	q.Check(ctx, allowReq)
	if got, want := indexDump(q.led), indexDump(p.led); got != want {
		t.Fatalf("after migration:\n got %s\nwant %s", got, want)
	}
	if len(q.led.fires) != 31 {
		t.Fatalf("migrated ledger has %d fires", len(q.led.fires))
	}
	var fires []StoredFire
	_ = again.View(ctx, func(tx *statefile.Tx) error {
		var err error
		fires, err = StoredFires(tx)
		return err
	})
	if len(fires) != 31 || !slices.IsSortedFunc(fires, func(a, b StoredFire) int { return a.At.Compare(b.At) }) {
		t.Fatalf("StoredFires: %d", len(fires))
	}
}
