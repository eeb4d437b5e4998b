package channels

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
)

func newPersistentHandler(t *testing.T, fc *clock.Fake, rec *recordInbound, path string, capacity int) *WebhookHandler {
	t.Helper()
	h, err := NewWebhookHandler(WebhookHandlerOptions{
		Name: "raven", Secret: testSecret, MaxBody: 512, SeenCapacity: capacity, SeenStatePath: path,
		Inbound: rec.inbound, Clock: fc,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func signedPost(h http.Handler, fc *clock.Fake, text string) (body, sig string, code int) {
	body = `{"chat_id":"ops","text":"` + text + `"}`
	sig = Sign(testSecret, fc.Now(), []byte(body))
	return body, sig, post(h, "/hooks/raven", body, sig).Code
}

// TestWebhookReplayRefusedAfterRestart is the attack of issue 10 §4: an
// attacker who captured a signed request replays it after the gateway
// restarts, still inside the window. Two handlers over the same state file
// stand for the process before and after the restart.
func TestWebhookReplayRefusedAfterRestart(t *testing.T) {
	fc := clock.NewFake(epoch)
	path := filepath.Join(t.TempDir(), "webhook-raven.seen")
	rec := &recordInbound{}
	before := newPersistentHandler(t, fc, rec, path, 100)
	body, sig, code := signedPost(before, fc, "deploy done")
	if code != http.StatusAccepted {
		t.Fatalf("first: %d", code)
	}
	before.Close()

	fc.Advance(2 * time.Minute)
	after := newPersistentHandler(t, fc, rec, path, 100)
	if w := post(after, "/hooks/raven", body, sig); w.Code != http.StatusConflict {
		t.Fatalf("replay after restart: %d %s, want 409", w.Code, w.Body)
	}
	if _, _, code := signedPost(after, fc, "a new one"); code != http.StatusAccepted {
		t.Fatalf("fresh request after restart: %d", code)
	}
	if len(rec.reqs) != 2 {
		t.Fatalf("inbound got %d requests, want 2", len(rec.reqs))
	}
	if got := after.StateRecovery(); got != "" {
		t.Fatalf("clean state reported as recovered: %q", got)
	}
}

// TestWebhookSeenStateCorrupt: a corrupt state file is moved aside and
// reported, never silently reset; since what it held is unknown, requests
// signed before the restart are refused (a replay cannot be ruled out)
// while new ones are accepted.
func TestWebhookSeenStateCorrupt(t *testing.T) {
	fc := clock.NewFake(epoch)
	path := filepath.Join(t.TempDir(), "webhook-raven.seen")
	rec := &recordInbound{}
	first := newPersistentHandler(t, fc, rec, path, 100)
	oldBody, oldSig, _ := signedPost(first, fc, "captured")
	first.Close()
	for name, content := range map[string]string{
		"garbage":    "\x00\x01not a state file\n",
		"bad header": "raven webhook seen v9\n",
		"bad line":   seenHeader + "\nzz 12\n" + strings.Repeat("a", 64) + " 1\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			fc.Advance(2 * time.Second)
			h := newPersistentHandler(t, fc, rec, path, 100)
			moved := h.StateRecovery()
			if !strings.Contains(moved, ".corrupt-") {
				t.Fatalf("not reported: %q", moved)
			}
			if b, err := os.ReadFile(moved); err != nil || string(b) != content {
				t.Fatalf("moved-aside file: %q %v", b, err)
			}
			w := post(h, "/hooks/raven", oldBody, oldSig)
			if w.Code != http.StatusConflict || !strings.Contains(w.Body.String(), ErrReplayStateLost.Error()) {
				t.Fatalf("request from before the restart: %d %s", w.Code, w.Body)
			}
			fc.Advance(time.Second)
			if _, _, code := signedPost(h, fc, "new "+name); code != http.StatusAccepted {
				t.Fatalf("new request: %d", code)
			}
			h.Close()
		})
	}
}

// TestWebhookSeenStateTornTail: a crash mid-append leaves a torn last line;
// it is skipped with the rest of the file kept.
func TestWebhookSeenStateTornTail(t *testing.T) {
	fc := clock.NewFake(epoch)
	path := filepath.Join(t.TempDir(), "webhook-raven.seen")
	rec := &recordInbound{}
	h := newPersistentHandler(t, fc, rec, path, 100)
	body, sig, _ := signedPost(h, fc, "kept")
	h.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("abcdef0123")
	f.Close()
	h2 := newPersistentHandler(t, fc, rec, path, 100)
	if got := h2.StateRecovery(); got != "" {
		t.Fatalf("torn tail treated as corruption: %q", got)
	}
	if w := post(h2, "/hooks/raven", body, sig); w.Code != http.StatusConflict {
		t.Fatalf("replay after torn tail: %d", w.Code)
	}
	if b, _ := os.ReadFile(path); strings.Contains(string(b), "abcdef0123") {
		t.Fatal("torn line kept in the rewritten file")
	}
}

// TestWebhookSeenStateBounded: the file holds live entries only, give or
// take one compaction's worth, however many requests pass.
func TestWebhookSeenStateBounded(t *testing.T) {
	fc := clock.NewFake(epoch)
	path := filepath.Join(t.TempDir(), "webhook-raven.seen")
	rec := &recordInbound{}
	const capacity = 5
	h := newPersistentHandler(t, fc, rec, path, capacity)
	maxLines := 0
	for i := range 200 {
		if _, _, code := signedPost(h, fc, fmt.Sprint(i)); code != http.StatusAccepted {
			t.Fatalf("request %d: %d", i, code)
		}
		fc.Advance(time.Minute + time.Second) // about 5 live at a time
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		maxLines = max(maxLines, strings.Count(string(b), "\n"))
	}
	if limit := 1 + 2*capacity + 1; maxLines > limit {
		t.Fatalf("state file grew to %d lines, limit %d", maxLines, limit)
	}
}

func TestWebhookSeenStateUnwritable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "missing-dir", "x", "seen")
	os.WriteFile(filepath.Join(dir, "missing-dir"), nil, 0o600) // a file where the dir should be
	_, err := NewWebhookHandler(WebhookHandlerOptions{Name: "raven", Secret: testSecret, SeenStatePath: path,
		Inbound: (&recordInbound{}).inbound, Clock: clock.NewFake(epoch)})
	if err == nil || errors.Is(err, ErrReplayed) {
		t.Fatalf("unwritable state path: %v", err)
	}
}
