package channels

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

var (
	testSecret = []byte("s3cret")
	epoch      = time.Date(2026, 10, 4, 9, 0, 0, 0, time.UTC)
)

func TestSignVerify(t *testing.T) {
	body := []byte(`{"chat_id":"a","text":"hi"}`)
	good := Sign(testSecret, epoch, body)
	tests := []struct {
		name   string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", good, body, epoch, nil},
		{"valid within window", good, body, epoch.Add(4 * time.Minute), nil},
		{"expired", good, body, epoch.Add(6 * time.Minute), ErrSignatureExpired},
		{"from the future", good, body, epoch.Add(-6 * time.Minute), ErrSignatureExpired},
		{"tampered body", good, []byte(`{"chat_id":"a","text":"rm"}`), epoch, ErrSignatureInvalid},
		{"wrong secret", Sign([]byte("other"), epoch, body), body, epoch, ErrSignatureInvalid},
		{"timestamp swapped", strings.Replace(good, "t=", "t=1", 1), body, epoch, ErrSignatureInvalid},
		{"missing", "", body, epoch, ErrSignatureMissing},
		{"garbage", "t=x,v1=zz", body, epoch, ErrSignatureMissing},
		{"short mac", "t=1,v1=abcd", body, epoch, ErrSignatureMissing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Verify(testSecret, tt.header, tt.body, tt.now, 5*time.Minute)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err %v, want %v", err, tt.want)
			}
		})
	}
}

type recordInbound struct {
	mu   sync.Mutex
	reqs []spine.TurnRequest
	err  error
}

func (r *recordInbound) inbound(_ context.Context, req spine.TurnRequest) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return r.err
}

func newTestHandler(t *testing.T, fc *clock.Fake, rec *recordInbound, capacity int) *WebhookHandler {
	t.Helper()
	h, err := NewWebhookHandler(WebhookHandlerOptions{
		Name: "raven", Secret: testSecret, MaxBody: 512, SeenCapacity: capacity,
		Inbound: rec.inbound, Clock: fc,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func post(h http.Handler, path, body, sig string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	if sig != "" {
		r.Header.Set(SignatureHeader, sig)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestWebhookInbound(t *testing.T) {
	fc := clock.NewFake(epoch)
	rec := &recordInbound{}
	h := newTestHandler(t, fc, rec, 100)
	body := `{"chat_id":"ops","text":"deploy done"}`
	sig := Sign(testSecret, epoch, []byte(body))

	if w := post(h, "/hooks/raven", body, sig); w.Code != http.StatusAccepted {
		t.Fatalf("valid: %d %s", w.Code, w.Body)
	}
	if len(rec.reqs) != 1 || !reflect.DeepEqual(rec.reqs[0], spine.TurnRequest{Origin: spine.OriginUser, Channel: "webhook", ChatID: "ops", Content: "deploy done"}) {
		t.Fatalf("inbound %+v", rec.reqs)
	}
	tests := []struct {
		name, path, body, sig string
		advance               time.Duration
		want                  int
	}{
		{"replay refused", "/hooks/raven", body, sig, 0, http.StatusConflict},
		{"replay refused later in window", "/hooks/raven", body, sig, 4 * time.Minute, http.StatusConflict},
		{"expired", "/hooks/raven", body, sig, 2 * time.Minute, http.StatusUnauthorized},
		{"unsigned", "/hooks/raven", body, "", 0, http.StatusUnauthorized},
		{"bad signature", "/hooks/raven", body, Sign([]byte("x"), epoch, []byte(body)), 0, http.StatusUnauthorized},
		{"wrong hook", "/hooks/other", body, sig, 0, http.StatusNotFound},
		{"oversize body", "/hooks/raven", `{"chat_id":"a","text":"` + strings.Repeat("x", 600) + `"}`, "", 0, http.StatusRequestEntityTooLarge},
		{"unknown field", "/hooks/raven", `{"chat_id":"a","text":"b","x":1}`, "sign", 0, http.StatusBadRequest},
		{"wrong type", "/hooks/raven", `{"chat_id":1,"text":"b"}`, "sign", 0, http.StatusBadRequest},
		{"trailing data", "/hooks/raven", `{"chat_id":"a","text":"b"}{}`, "sign", 0, http.StatusBadRequest},
		{"empty text", "/hooks/raven", `{"chat_id":"a","text":""}`, "sign", 0, http.StatusBadRequest},
		{"missing chat", "/hooks/raven", `{"text":"b"}`, "sign", 0, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc.Advance(tt.advance)
			s := tt.sig
			if s == "sign" {
				s = Sign(testSecret, fc.Now(), []byte(tt.body))
			}
			if w := post(h, tt.path, tt.body, s); w.Code != tt.want {
				t.Fatalf("code %d, want %d (%s)", w.Code, tt.want, w.Body)
			}
		})
	}
	if len(rec.reqs) != 1 {
		t.Fatalf("refused requests reached inbound: %+v", rec.reqs)
	}
	r := httptest.NewRequest(http.MethodGet, "/hooks/raven", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", w.Code)
	}
}

func TestWebhookReplayCacheBounded(t *testing.T) {
	fc := clock.NewFake(epoch)
	rec := &recordInbound{}
	h := newTestHandler(t, fc, rec, 2)
	send := func(text string) int {
		b := `{"chat_id":"a","text":"` + text + `"}`
		return post(h, "/hooks/raven", b, Sign(testSecret, fc.Now(), []byte(b))).Code
	}
	for _, s := range []string{"1", "2"} {
		if c := send(s); c != http.StatusAccepted {
			t.Fatalf("%s: %d", s, c)
		}
	}
	if c := send("3"); c != http.StatusTooManyRequests {
		t.Fatalf("full cache: %d, want 429 rather than forgetting a live signature", c)
	}
	fc.Advance(6 * time.Minute)
	if c := send("4"); c != http.StatusAccepted {
		t.Fatalf("after expiry: %d", c)
	}
	if len(h.seen) != 1 {
		t.Fatalf("expired entries not evicted: %d", len(h.seen))
	}
}

func TestWebhookInboundError(t *testing.T) {
	fc := clock.NewFake(epoch)
	rec := &recordInbound{err: errors.New("closed")}
	h := newTestHandler(t, fc, rec, 10)
	b := `{"chat_id":"a","text":"x"}`
	if w := post(h, "/hooks/raven", b, Sign(testSecret, epoch, []byte(b))); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("code %d", w.Code)
	}
	if _, err := NewWebhookHandler(WebhookHandlerOptions{Name: "raven", Inbound: rec.inbound, Clock: fc}); err == nil {
		t.Fatal("empty secret accepted")
	}
}

func TestWebhookOutletRetriesThenSucceeds(t *testing.T) {
	fc := clock.NewFake(epoch)
	var calls atomic.Int32
	ids := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, _, err := Verify(testSecret, r.Header.Get(SignatureHeader), body, fc.Now(), 5*time.Minute); err != nil {
			t.Errorf("outbound signature: %v", err)
		}
		var m OutboundMessage
		if err := json.Unmarshal(body, &m); err != nil || m.Text != "**verbatim** _x_" || m.ChatID != "ops" || !m.Proactive {
			t.Errorf("body %s (%v)", body, err)
		}
		ids <- r.Header.Get(DeliveryHeader)
		if calls.Add(1) <= 2 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	o, err := NewWebhookOutlet(WebhookOutletOptions{URL: srv.URL, Secret: testSecret, Clock: fc, Client: srv.Client(), BaseBackoff: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- o.Deliver(context.Background(), spine.Message{Channel: "webhook", ChatID: "ops", Content: "**verbatim** _x_", Proactive: true})
	}()
	for _, d := range []time.Duration{time.Second, 2 * time.Second} {
		fc.BlockUntil(1)
		fc.Advance(d)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Fatalf("calls %d, want 3", calls.Load())
	}
	first := <-ids
	for range 2 {
		if id := <-ids; id != first || id == "" {
			t.Fatalf("delivery id changed across retries: %q vs %q", id, first)
		}
	}
}

func TestWebhookOutletGivesUp(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		attempts  int
		wantCalls int32
	}{
		{"permanent 400 not retried", http.StatusBadRequest, 5, 1},
		{"bounded attempts", http.StatusBadGateway, 3, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := clock.NewFake(epoch)
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.WriteHeader(tt.status)
			}))
			defer srv.Close()
			o, _ := NewWebhookOutlet(WebhookOutletOptions{URL: srv.URL, Secret: testSecret, Clock: fc, Client: srv.Client(), MaxAttempts: tt.attempts})
			done := make(chan error, 1)
			go func() { done <- o.Deliver(context.Background(), spine.Message{ChatID: "a", Content: "x"}) }()
			for i := int32(1); i < tt.wantCalls; i++ {
				fc.BlockUntil(1)
				fc.Advance(time.Minute)
			}
			if err := <-done; err == nil {
				t.Fatal("delivery reported success")
			}
			if calls.Load() != tt.wantCalls {
				t.Fatalf("calls %d, want %d", calls.Load(), tt.wantCalls)
			}
		})
	}
}

func TestWebhookOutletHonoursContext(t *testing.T) {
	fc := clock.NewFake(epoch)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	o, _ := NewWebhookOutlet(WebhookOutletOptions{URL: srv.URL, Secret: testSecret, Clock: fc, Client: srv.Client()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Deliver(ctx, spine.Message{ChatID: "a", Content: "x"}) }()
	fc.BlockUntil(1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}
