package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/outbox"
	"github.com/raven-agent/raven/internal/sqlitedb"
)

func TestInboxCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	// No database yet: an empty inbox, and nothing created.
	out, err := runRaven(t, "", "--data-dir", dir, "inbox")
	if err != nil || out != "inbox empty\n" {
		t.Fatalf("inbox on a fresh dir = %q, %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "raven.db")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("inbox created raven.db: %v", err)
	}

	db, err := sqlitedb.Open(filepath.Join(dir, "raven.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := outbox.Open(ctx, db, outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	reminder, _ := st.Put(ctx, outbox.Item{Origin: outbox.OriginCron, Kind: "reply", Content: "Reminder: call the dentist\nbefore noon"})
	nudge, _ := st.Put(ctx, outbox.Item{Origin: outbox.OriginSentinel, Kind: "nudge", Content: "Your PR has two approvals.", Extras: json.RawMessage(`{"nudge_id":"n1"}`)})
	shown, _ := st.Put(ctx, outbox.Item{Origin: outbox.OriginHeartbeat, Content: "Disk 91% full."})
	if _, err := st.Claim(ctx, "tui:7", 0); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, reminder, "tui:7"); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, nudge, "tui:7"); err != nil {
		t.Fatal(err)
	}

	out, err = runRaven(t, "", "--data-dir", dir, "inbox")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 message(s) waiting", "cron/reply", reminder, "  Reminder: call the dentist\n  before noon\n", "sentinel/nudge", "(being shown on tui:7)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("inbox output lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, reminder) > strings.Index(out, nudge) {
		t.Fatalf("not oldest first:\n%s", out)
	}

	out, err = runRaven(t, "", "--data-dir", dir, "inbox", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var listing inboxListing
	if err := json.Unmarshal([]byte(out), &listing); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if listing.Pending != 3 || listing.Items[1].ID != nudge || !strings.Contains(string(listing.Items[1].Extras), `"nudge_id": "n1"`) {
		t.Fatalf("json listing %+v", listing)
	}

	if _, err := runRaven(t, "", "--data-dir", dir, "inbox", "clear", "ob_nope"); !errors.Is(err, outbox.ErrNotFound) {
		t.Fatalf("clear unknown id = %v", err)
	}
	stdout, stderr, err := runRavenIO(t, "", "--data-dir", dir, "inbox", "clear")
	if err != nil || stdout != "cleared 2 message(s); 1 taken by another surface\n" || !strings.Contains(stderr, "claimed by tui:7") {
		t.Fatalf("clear = %q / %q, %v", stdout, stderr, err)
	}
	if it, _ := st.Get(ctx, reminder); it.DeliveredTo != "cli" {
		t.Fatalf("reminder after clear: %+v", it)
	}
	if err := st.MarkDelivered(ctx, shown, "tui:7"); err != nil {
		t.Fatal(err)
	}
	out, err = runRaven(t, "", "--data-dir", dir, "inbox", "--json")
	if err != nil || !strings.Contains(out, `"pending": 0`) || !strings.Contains(out, `"items": []`) {
		t.Fatalf("inbox after clear = %q, %v", out, err)
	}
}
