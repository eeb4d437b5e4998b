package predictor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// behaviors.md is safe to edit: an owner's last line without a newline (or
// a torn append) must not have the next event glued to it.
func TestBehaviorsAppendAfterOwnerEditWithoutNewline(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, nil)
	owner := behaviorsHeader + "- my own note, no newline at the end"
	os.MkdirAll(filepath.Dir(r.path), 0o700)
	if err := os.WriteFile(r.path, []byte(owner), 0o600); err != nil {
		t.Fatal(err)
	}
	m1 := t0.Add(-time.Hour)
	r.src.add(msg(m1, "user", "off to the gym"))
	r.last = m1
	r.prov.reply = toolReply(eventsJSON(ev(m1, "habit", "Owner goes to the gym", 0.9)))
	if res := r.ex.MaybeRun(ctx); !res.Ran || len(res.Events) != 1 {
		t.Fatalf("result = %+v", res)
	}
	want := owner + "\n- " + m1.Format(time.RFC3339) + " [habit] Owner goes to the gym (confidence 0.90)\n"
	if got := r.file(t); got != want {
		t.Fatalf("behaviors.md =\n%s\nwant\n%s", got, want)
	}
	if strings.Count(r.file(t), "# Behaviors") != 1 {
		t.Fatal("header written twice")
	}
}
