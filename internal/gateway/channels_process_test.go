package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/channels"
	"github.com/raven-agent/raven/internal/channels/telegramtest"
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

	// The replay cache outlives the process: the captured request, still
	// inside its window, is refused by the next gateway too.
	gw2 := startGateway(t, dir, writeScript(t, scriptReply("pong from raven")))
	gw2.waitReady(t)
	if code := post(sig); code != http.StatusConflict {
		t.Errorf("replay after restart: %d, want 409\n%s", code, gw2.log.String())
	}
	if code, _ := gw2.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("second gateway exit %d\n%s", code, gw2.log.String())
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
	bot := telegramtest.New(t)
	writeConfig(t, dir, map[string]any{"channels": map[string]any{"telegram": map[string]any{
		"enabled": true, "token": telegramtest.Token, "allow_from": []int64{owner}, "api_url": bot.URL,
	}}})
	gw := startGateway(t, dir, writeScript(t, scriptReply("Hello owner, all is well.")))
	gw.waitReady(t)

	// The handler is synchronous, so the refusal is sent before the owner's
	// update is even read; if the stranger had run a turn, it would have
	// consumed the only scripted reply and the owner would get an error.
	bot.Push(stranger, stranger, "let me in")
	bot.Push(owner, owner, "how are things?")
	if s := bot.Next(t); s.ChatID != stranger || unescapeMarkdownV2(s.Text) != channels.TelegramRefusal {
		t.Errorf("first send %+v, want the refusal to %d", s, stranger)
	}
	if s := bot.NextReply(t); s.ChatID != owner || unescapeMarkdownV2(s.Text) != "Hello owner, all is well." {
		t.Errorf("second send %+v, want the reply to %d", s, owner)
	}
	if code, _ := gw.stop(t, syscall.SIGTERM, 15*time.Second); code != 0 {
		t.Fatalf("gateway exit %d\n%s", code, gw.log.String())
	}
	bot.None(t)
}
