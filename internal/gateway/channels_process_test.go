package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels"
)

// delivery is one outbound webhook POST seen by the receiver.
type delivery struct {
	header http.Header
	body   []byte
}

// webhookReceiver is the owner's endpoint that outbound webhook posts reach.
func webhookReceiver(t *testing.T) (*httptest.Server, chan delivery) {
	t.Helper()
	got := make(chan delivery, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{header: r.Header.Clone(), body: b}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// A signed inbound hook through the real gateway gets its reply POSTed,
// signed, to the outbound URL; a forged signature is 401, a replay 409.
func TestGatewayWebhook(t *testing.T) {
	const secret = "s3cret-for-tests"
	dir := t.TempDir()
	recv, got := webhookReceiver(t)
	listen := freeAddr(t)
	writeConfig(t, dir, map[string]any{"channels": map[string]any{"webhook": map[string]any{
		"enabled": true, "listen": listen, "name": "hook", "secret": secret, "outbound_url": recv.URL,
	}}})
	gw := startGateway(t, dir, writeScript(t, scriptReply("pong from raven")))
	gw.waitReady(t)

	url := "http://" + listen + "/hooks/hook"
	body := []byte(`{"chat_id":"c1","text":"ping"}`)
	sig := channels.Sign([]byte(secret), time.Now(), body)
	post := func(sig string) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set(channels.SignatureHeader, sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	if code := post(sig); code != http.StatusAccepted {
		t.Fatalf("signed POST: %d, want 202\n%s", code, gw.log.String())
	}
	select {
	case d := <-got:
		if _, _, err := channels.Verify([]byte(secret), d.header.Get(channels.SignatureHeader), d.body, time.Now(), time.Minute); err != nil {
			t.Errorf("outbound signature: %v", err)
		}
		var m channels.OutboundMessage
		if err := json.Unmarshal(d.body, &m); err != nil {
			t.Fatalf("outbound body %s: %v", d.body, err)
		}
		if m.ChatID != "c1" || m.Text != "pong from raven" || !m.Reply {
			t.Errorf("outbound %+v, want the reply to c1", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no outbound POST within 10s\n%s", gw.log.String())
	}

	forged := channels.Sign([]byte("not-the-secret"), time.Now(), body)
	tests := []struct {
		name string
		sig  string
		want int
	}{
		{"forged signature", forged, http.StatusUnauthorized},
		{"missing signature", "", http.StatusUnauthorized},
		{"replay", sig, http.StatusConflict},
	}
	for _, tt := range tests {
		if code := post(tt.sig); code != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, code, tt.want)
		}
	}
	// None of the refused requests ran a turn: nothing more was posted.
	select {
	case d := <-got:
		t.Errorf("unexpected outbound POST %s", d.body)
	default:
	}
	if code, _ := gw.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("gateway exit %d\n%s", code, gw.log.String())
	}
}

const fakeBotToken = "123:abc"

// tgSent is one sendMessage call seen by fakeBotAPI.
type tgSent struct {
	ChatID int64
	Text   string
}

// fakeBotAPI is a minimal Telegram Bot API: getMe, long-polled getUpdates
// and sendMessage (the same shape as the one in internal/channels' tests).
type fakeBotAPI struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	updates []map[string]any
	nextID  int64
	wake    chan struct{}
	sent    chan tgSent
	// closed ends pending long polls before the server closes (see
	// internal/channels' fake: httptest's Close waits for handlers).
	closed chan struct{}
}

func newFakeBotAPI(t *testing.T) *fakeBotAPI {
	f := &fakeBotAPI{t: t, nextID: 1, wake: make(chan struct{}, 1), sent: make(chan tgSent, 64), closed: make(chan struct{})}
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
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+fakeBotToken+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	if err := r.ParseMultipartForm(1 << 20); err != nil && r.ContentLength > 0 {
		f.t.Errorf("fake bot api: %s: %v", method, err)
	}
	ok200 := func(result any) { _ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result}) }
	switch method {
	case "getMe":
		ok200(map[string]any{"id": 123, "is_bot": true, "first_name": "raven"})
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
				ok200(out)
				return
			}
			select {
			case <-f.wake:
			case <-r.Context().Done():
				return
			case <-f.closed:
				ok200([]map[string]any{})
				return
			}
		}
	case "sendMessage":
		chatID, _ := strconv.ParseInt(r.FormValue("chat_id"), 10, 64)
		f.sent <- tgSent{ChatID: chatID, Text: r.FormValue("text")}
		ok200(map[string]any{"message_id": 1, "date": 0, "chat": map[string]any{"id": chatID, "type": "private"}})
	default:
		f.t.Errorf("fake bot api: unexpected method %s", method)
		_, _ = fmt.Fprint(w, `{"ok":false,"error_code":404,"description":"Not Found"}`)
	}
}

func (f *fakeBotAPI) next(t *testing.T) tgSent {
	t.Helper()
	select {
	case s := <-f.sent:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no sendMessage within 10s")
		return tgSent{}
	}
}

// unescapeMarkdownV2 undoes the channel's MarkdownV2 escaping for comparison.
func unescapeMarkdownV2(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Telegram through the real gateway, against a fake Bot API set with
// channels.telegram.api_url: a stranger is refused without running a turn,
// the owner's message is answered with sendMessage.
func TestGatewayTelegram(t *testing.T) {
	const owner, stranger = 42, 666
	dir := t.TempDir()
	bot := newFakeBotAPI(t)
	writeConfig(t, dir, map[string]any{"channels": map[string]any{"telegram": map[string]any{
		"enabled": true, "token": fakeBotToken, "allow_from": []int64{owner}, "api_url": bot.srv.URL,
	}}})
	gw := startGateway(t, dir, writeScript(t, scriptReply("Hello owner, all is well.")))
	gw.waitReady(t)

	// The handler is synchronous, so the refusal is sent before the owner's
	// update is even read; if the stranger had run a turn, it would have
	// consumed the only scripted reply and the owner would get an error.
	bot.push(stranger, stranger, "let me in")
	bot.push(owner, owner, "how are things?")
	if s := bot.next(t); s.ChatID != stranger || unescapeMarkdownV2(s.Text) != channels.TelegramRefusal {
		t.Errorf("first send %+v, want the refusal to %d", s, stranger)
	}
	if s := bot.next(t); s.ChatID != owner || unescapeMarkdownV2(s.Text) != "Hello owner, all is well." {
		t.Errorf("second send %+v, want the reply to %d", s, owner)
	}
	if code, _ := gw.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("gateway exit %d\n%s", code, gw.log.String())
	}
	select {
	case s := <-bot.sent:
		t.Errorf("unexpected sendMessage %+v", s)
	default:
	}
}
