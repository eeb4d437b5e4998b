package channels

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

const testToken = "123:abc"

// sent is one sendMessage call seen by the fake Bot API.
type sent struct {
	ChatID    int64
	Text      string
	ParseMode string
}

// fakeBotAPI is a minimal local Telegram Bot API: getMe, long-polled
// getUpdates and sendMessage, speaking the multipart form the library sends.
type fakeBotAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	updates []map[string]any
	nextID  int64
	wake    chan struct{}
	// parseFailures makes the next N MarkdownV2 sends fail like Telegram
	// does on a formatting error.
	parseFailures int

	sent chan sent
	// closed ends pending long polls before the server closes: httptest's
	// Close waits for handlers, and a poll whose client vanished without
	// closing its connection would otherwise wait forever.
	closed chan struct{}
}

func newFakeBotAPI(t *testing.T) *fakeBotAPI {
	f := &fakeBotAPI{t: t, nextID: 1, wake: make(chan struct{}, 1), sent: make(chan sent, 64), closed: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.closed) }) // runs before srv.Close (cleanups are LIFO)
	return f
}

func (f *fakeBotAPI) push(fromID, chatID int64, text string) {
	f.mu.Lock()
	f.updates = append(f.updates, map[string]any{
		"update_id": f.nextID,
		"message": map[string]any{
			"message_id": f.nextID, "date": 0, "text": text,
			"from": map[string]any{"id": fromID, "is_bot": false, "first_name": "u"},
			"chat": map[string]any{"id": chatID, "type": "private"},
		},
	})
	f.nextID++
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fakeBotAPI) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+testToken+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil && r.ContentLength > 0 {
		f.t.Errorf("fake bot api: %s: %v", method, err)
	}
	switch method {
	case "getMe":
		reply(w, map[string]any{"id": 123, "is_bot": true, "first_name": "raven"})
	case "getUpdates":
		offset, _ := strconv.ParseInt(r.FormValue("offset"), 10, 64)
		for {
			f.mu.Lock()
			var out []map[string]any
			for _, u := range f.updates {
				if u["update_id"].(int64) >= offset {
					out = append(out, u)
				}
			}
			f.mu.Unlock()
			if len(out) > 0 {
				reply(w, out)
				return
			}
			select {
			case <-f.wake:
			case <-r.Context().Done():
				return
			case <-f.closed:
				reply(w, []map[string]any{})
				return
			}
		}
	case "sendMessage":
		chatID, _ := strconv.ParseInt(r.FormValue("chat_id"), 10, 64)
		s := sent{ChatID: chatID, Text: r.FormValue("text"), ParseMode: r.FormValue("parse_mode")}
		f.mu.Lock()
		fail := s.ParseMode != "" && f.parseFailures > 0
		if fail {
			f.parseFailures--
		}
		f.mu.Unlock()
		if fail {
			_, _ = fmt.Fprint(w, `{"ok":false,"error_code":400,"description":"Bad Request: can't parse entities: character '!' is reserved"}`)
			return
		}
		f.sent <- s
		reply(w, map[string]any{"message_id": 1, "date": 0, "chat": map[string]any{"id": chatID, "type": "private"}})
	default:
		f.t.Errorf("fake bot api: unexpected method %s", method)
		_, _ = fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
	}
}

func reply(w http.ResponseWriter, result any) {
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func (f *fakeBotAPI) next(t *testing.T) sent {
	t.Helper()
	select {
	case s := <-f.sent:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no sendMessage within 10s")
		return sent{}
	}
}

func (f *fakeBotAPI) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-f.sent:
		t.Fatalf("unexpected sendMessage %+v", s)
	default:
	}
}

// runTelegram starts the channel against the fake; the returned stop ends
// it and waits for Run to return.
func runTelegram(t *testing.T, f *fakeBotAPI, inbound Inbound) (*Telegram, func()) {
	t.Helper()
	tg, err := NewTelegram(TelegramOptions{
		Token: testToken, AllowFrom: []int64{7}, ServerURL: f.srv.URL,
		PollTimeout: 2 * time.Second, Inbound: inbound, Clock: clock.NewFake(epoch),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tg.Run(ctx)
	}()
	return tg, func() { cancel(); <-done }
}

// TestTelegramRoundTrip: an update from the owner reaches the dispatcher,
// the turn runs on the real scheduler, and the reply goes back through the
// hub to sendMessage with the right chat id.
func TestTelegramRoundTrip(t *testing.T) {
	f := newFakeBotAPI(t)
	hub := spine.NewHub(nil)
	sched := spine.NewScheduler(func(_ context.Context, turn *spine.Turn) (string, error) {
		return "echo: " + turn.Request.Content + "!", nil
	}, hub, spine.Options{})
	defer sched.Shutdown(context.Background())
	d, err := NewDispatcher(DispatcherDeps{HasInflight: sched.HasInflight, Submit: sched.Submit, Post: hub.Post})
	if err != nil {
		t.Fatal(err)
	}
	tg, stop := runTelegram(t, f, d.Inbound)
	defer stop()
	hub.Register(TelegramChannel, tg)

	f.push(7, 9001, "hi there")
	got := f.next(t)
	if got.ChatID != 9001 || got.Text != `echo: hi there\!` || got.ParseMode != "MarkdownV2" {
		t.Fatalf("sent %+v", got)
	}

	// A proactive message goes out verbatim: no marker on a real channel.
	if err := hub.Post(context.Background(), spine.Message{Channel: TelegramChannel, ChatID: "9001", Content: "Stand up.", Proactive: true}); err != nil {
		t.Fatal(err)
	}
	if got := f.next(t); got.Text != `Stand up\.` || strings.Contains(got.Text, ProactiveMarker) {
		t.Fatalf("proactive sent %+v", got)
	}
}

func TestTelegramAllowList(t *testing.T) {
	f := newFakeBotAPI(t)
	reqs := make(chan spine.TurnRequest, 4)
	_, stop := runTelegram(t, f, func(_ context.Context, r spine.TurnRequest) error { reqs <- r; return nil })
	f.push(666, 500, "let me in")
	if got := f.next(t); got.ChatID != 500 || got.Text != TelegramRefusal {
		t.Fatalf("refusal %+v", got)
	}
	f.push(666, 500, "please")
	f.push(7, 501, "owner here")
	// Updates are handled in order on one worker: once the owner's message
	// arrives, the stranger's second one has been handled (silently).
	var r spine.TurnRequest
	select {
	case r = <-reqs:
	case <-time.After(10 * time.Second):
		t.Fatal("owner message never reached inbound")
	}
	stop()
	f.none(t)
	if r.Channel != TelegramChannel || r.ChatID != "501" || r.Content != "owner here" || r.Origin != spine.OriginUser {
		t.Fatalf("inbound %+v", r)
	}
	if len(reqs) != 0 {
		t.Fatalf("a stranger's message reached inbound: %+v", <-reqs)
	}
}

func TestTelegramDeliverSplitsAndFallsBack(t *testing.T) {
	f := newFakeBotAPI(t)
	tg, stop := runTelegram(t, f, (&recordInbound{}).inbound)
	defer stop()
	long := strings.Repeat("a", 4000) + "\n\n" + strings.Repeat("b", 200)
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "5", Content: long}); err != nil {
		t.Fatal(err)
	}
	if a, b := f.next(t), f.next(t); a.Text != strings.Repeat("a", 4000) || b.Text != strings.Repeat("b", 200) {
		t.Fatalf("split into %d + %d chars", len(a.Text), len(b.Text))
	}
	f.mu.Lock()
	f.parseFailures = 1
	f.mu.Unlock()
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "5", Content: "hi!"}); err != nil {
		t.Fatal(err)
	}
	if got := f.next(t); got.Text != "hi!" || got.ParseMode != "" {
		t.Fatalf("fallback sent %+v", got)
	}
	if err := tg.Deliver(context.Background(), spine.Message{ChatID: "not-a-number", Content: "x"}); err == nil {
		t.Fatal("bad chat id accepted")
	}
}
