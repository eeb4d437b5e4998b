package channels

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/raven-agent/raven/internal/clock"
	"github.com/raven-agent/raven/internal/spine"
)

// BenchmarkWebhookInbound measures one accepted request with the replay
// cache in memory and kept on disk (one fsynced append per request).
func BenchmarkWebhookInbound(b *testing.B) {
	for _, persist := range []bool{false, true} {
		name := "memory"
		if persist {
			name = "file"
		}
		b.Run(name, func(b *testing.B) { benchWebhookInbound(b, persist) })
	}
}

func benchWebhookInbound(b *testing.B, persist bool) {
	fc := clock.NewFake(epoch)
	o := WebhookHandlerOptions{
		Name: "raven", Secret: testSecret, SeenCapacity: 1 << 30, Clock: fc,
		Inbound: func(context.Context, spine.TurnRequest) error { return nil },
	}
	if persist {
		o.SeenStatePath = filepath.Join(b.TempDir(), "seen")
	}
	h, err := NewWebhookHandler(o)
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		body := `{"chat_id":"ops","text":"message ` + strconv.Itoa(i) + `"}`
		r := httptest.NewRequest(http.MethodPost, "/hooks/raven", strings.NewReader(body))
		r.Header.Set(SignatureHeader, Sign(testSecret, epoch, []byte(body)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted {
			b.Fatal(w.Code, w.Body)
		}
	}
}

func BenchmarkDispatch(b *testing.B) {
	d, _ := NewDispatcher(DispatcherDeps{
		HasInflight:     func(string) bool { return true },
		Submit:          func(spine.TurnRequest) (*spine.Ticket, error) { return nil, nil },
		PendingQuestion: func(string) bool { return false },
		AnswerQuestion:  func(string, string) bool { return false },
		Hooks:           []Hook{func(context.Context, spine.TurnRequest) (bool, string) { return false, "" }},
	})
	req := spine.TurnRequest{Channel: "telegram", ChatID: "42", Content: "hello"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := d.Dispatch(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
